package export

import (
	"strings"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
)

// Row is one request as a Parquet row: the interchange CSV's fields
// (latency_ms is e2e_ms) plus the request's scope, its timestamps and
// segment durations, its cache, routing and contract fields, and its
// grading. Column names are those of records.jsonl. The answer text is
// left out: statistics never read it, and it would be most of the file.
//
// A value the request does not have is NULL, never 0, so SQL engines
// count, average and filter only the requests that have one:
//   - a string a record leaves empty (no leak, no misroute, no error), so
//     count(leak) counts leaks;
//   - the timestamps and the segments crab's runner and serve measure
//     (lag_ms, queue_ms, model_ms; tokens_in, tokens_out) on a record
//     without a timeline: interchange CSV carries none of them, and
//     ttft_ms there only when its column gives one;
//   - cache_ms without a cache layer (cache empty), route_ms and
//     route_score on a request no router or cascade scored (routed
//     false), validate_ms without a contract, similarity but on a
//     semantic cache's hit;
//   - grade_ms and grade_cost where no external grader ran.
//
// Costs that are zero because nothing was spent (shadow_cost,
// escalation_cost) stay 0.
//
// Strings that repeat (arm, task, group, model, outcome...) are dictionary
// encoded, durations and costs use the byte-stream-split encoding, and
// every column is zstd-compressed.
type Row struct {
	RunID  string  `parquet:"run_id,dict"`
	Arm    string  `parquet:"arm,dict"`
	Repeat int32   `parquet:"repeat"`
	Seq    int64   `parquet:"seq,delta"`
	Warmup bool    `parquet:"warmup"`
	Shard  *string `parquet:"shard,dict,optional"`

	TaskID     string  `parquet:"task_id,dict"`
	Group      *string `parquet:"group,dict,optional"`
	Difficulty *string `parquet:"difficulty,dict,optional"`
	// Scope's fields are columns of their own, NULL when empty (see
	// model.Scope's tags).
	model.Scope

	IntendedAt  *time.Time `parquet:"intended_at,timestamp(nanosecond),optional"`
	SentAt      *time.Time `parquet:"sent_at,timestamp(nanosecond),optional"`
	FirstByteAt *time.Time `parquet:"first_byte_at,timestamp(nanosecond),optional"`
	DoneAt      *time.Time `parquet:"done_at,timestamp(nanosecond),optional"`

	LagMs      *float64 `parquet:"lag_ms,split,optional"`
	QueueMs    *float64 `parquet:"queue_ms,split,optional"`
	CacheMs    *float64 `parquet:"cache_ms,split,optional"`
	RouteMs    *float64 `parquet:"route_ms,split,optional"`
	ModelMs    *float64 `parquet:"model_ms,split,optional"`
	TTFTMs     *float64 `parquet:"ttft_ms,split,optional"`
	ValidateMs *float64 `parquet:"validate_ms,split,optional"`
	E2EMs      *float64 `parquet:"e2e_ms,split,optional"`
	SlotWait   bool     `parquet:"slot_wait"`

	Outcome string  `parquet:"outcome,dict"`
	Error   *string `parquet:"error,dict,optional"`

	Cache         *string  `parquet:"cache,dict,optional"`
	Leak          *string  `parquet:"leak,dict,optional"`
	ScopeMismatch bool     `parquet:"scope_mismatch"`
	Similarity    *float64 `parquet:"similarity,split,optional"`
	CacheOrigin   *string  `parquet:"cache_origin,dict,optional"`
	FalseHit      bool     `parquet:"false_hit"`
	Model         *string  `parquet:"model,dict,optional"`
	RouteScore    *float64 `parquet:"route_score,split,optional"`
	Routed        bool     `parquet:"routed"`
	RouteFallback bool     `parquet:"route_fallback"`
	Misroute      *string  `parquet:"misroute,dict,optional"`
	Escalated     bool     `parquet:"escalated"`
	Attempts      int32    `parquet:"attempts"`

	TokensIn       *int64   `parquet:"tokens_in,optional"`
	TokensOut      *int64   `parquet:"tokens_out,optional"`
	Cost           *float64 `parquet:"cost,split,optional"`
	ShadowCost     *float64 `parquet:"shadow_cost,split,optional"`
	EscalationCost *float64 `parquet:"escalation_cost,split,optional"`

	Contract   *string  `parquet:"contract,dict,optional"`
	ContractOK bool     `parquet:"contract_ok"`
	Violations []string `parquet:"violations,list"`
	Category   *string  `parquet:"category,dict,optional"`
	Expected   *string  `parquet:"expected,dict,optional"`
	// TaskExpected is the task's expected answer (JSON: the fields the
	// graders check) from the run's task file; NULL without one (see
	// Runs).
	TaskExpected *string  `parquet:"task_expected,optional"`
	Correct      *bool    `parquet:"correct,optional"`
	Pass         *bool    `parquet:"pass,optional"`
	GradeReason  *string  `parquet:"grade_reason,dict,optional"`
	GradeError   *string  `parquet:"grade_error,dict,optional"`
	GradeCost    *float64 `parquet:"grade_cost,split,optional"`
	GradeMs      *float64 `parquet:"grade_ms,split,optional"`
	// Unmeasured names the figures the record's source did not measure
	// (records.Figures, space-separated); their columns are NULL, never 0
	// or false, so a query cannot read a placeholder as a measurement.
	Unmeasured *string `parquet:"unmeasured,dict,optional"`
}

// RowOf is rec as a Parquet row.
func RowOf(rec *records.Record) Row {
	r := Row{
		RunID: rec.RunID, Arm: rec.Arm, Repeat: int32(rec.Repeat), Seq: int64(rec.Seq), Warmup: rec.Warmup, Shard: strOrNil(rec.Shard),
		TaskID: rec.TaskID, Group: strOrNil(rec.Group), Difficulty: strOrNil(rec.Difficulty), Scope: rec.Scope,
		IntendedAt: timeOrNil(rec.IntendedAt), SentAt: timeOrNil(rec.SentAt),
		FirstByteAt: timeOrNil(rec.FirstByteAt), DoneAt: timeOrNil(rec.DoneAt),
		SlotWait: rec.SlotWait,
		Outcome:  rec.Outcome, Error: strOrNil(rec.Error),
		Cache: strOrNil(rec.Cache), Leak: strOrNil(rec.Leak), ScopeMismatch: rec.ScopeMismatch,
		CacheOrigin: strOrNil(rec.CacheOrigin), FalseHit: rec.FalseHit, Model: strOrNil(rec.Model),
		Routed: rec.Routed, RouteFallback: rec.RouteFallback, Misroute: strOrNil(rec.Misroute), Escalated: rec.Escalated,
		Attempts: int32(rec.Attempts),
		Contract: strOrNil(rec.Contract), ContractOK: rec.ContractOK, Violations: rec.Violations,
		Category: strOrNil(rec.Category), Expected: strOrNil(rec.Expected),
		GradeReason: strOrNil(rec.GradeReason), GradeError: strOrNil(rec.GradeError),
	}
	timed := !rec.IntendedAt.IsZero()
	r.E2EMs = numIf(rec.Measured(records.FigureLatency), rec.E2EMs)
	r.Cost = numIf(rec.Measured(records.FigureCost), rec.Cost)
	r.EscalationCost = numIf(rec.Measured(records.FigureCost), rec.EscalationCost)
	r.ShadowCost = numIf(rec.Measured(records.FigureShadowCost), rec.ShadowCost)
	if rec.Measured(records.FigureQuality) {
		r.Correct, r.Pass = &rec.Correct, &rec.Pass
	}
	r.Unmeasured = strOrNil(strings.Join(rec.Unmeasured, " "))
	r.LagMs, r.QueueMs, r.ModelMs = numIf(timed, rec.LagMs), numIf(timed, rec.QueueMs), numIf(timed, rec.ModelMs)
	tokens := timed && rec.Measured(records.FigureTokens)
	r.TokensIn, r.TokensOut = intIf(tokens, rec.TokensIn), intIf(tokens, rec.TokensOut)
	r.TTFTMs = numIf((timed || rec.TTFTMs != 0) && rec.Measured(records.FigureTTFT), rec.TTFTMs)
	r.CacheMs = numIf(timed && rec.Cache != "", rec.CacheMs)
	r.RouteMs = numIf(timed && rec.Routed, rec.RouteMs)
	r.RouteScore = numIf(rec.Routed, rec.RouteScore)
	r.ValidateMs = numIf(timed && rec.Contract != "", rec.ValidateMs)
	r.Similarity = numIf(rec.Cache == "hit" && rec.Similarity != 0, rec.Similarity)
	graded := rec.GradeMs != 0 || rec.GradeCost != 0
	r.GradeCost, r.GradeMs = numIf(graded && rec.Measured(records.FigureGradeCost), rec.GradeCost), numIf(graded, rec.GradeMs)
	return r
}

func strOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// numIf is v when the request has the value, else NULL.
func numIf(has bool, v float64) *float64 {
	if !has {
		return nil
	}
	return &v
}

func intIf(has bool, v int) *int64 {
	if !has {
		return nil
	}
	n := int64(v)
	return &n
}
