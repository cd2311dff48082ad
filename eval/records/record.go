package records

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/crab-testbed/crab/model"
)

// The lean codec of Record (its scanner, AppendJSON and Clone) is
// generated from the struct below: after changing a field, run go generate
// (see docs/formats.md, "Adding a record field").
//
//go:generate go run ./internal/gencodec/cmd -type Record -in record.go -out codec_gen.go

// Outcomes: every scheduled request ends in exactly one.
// LeakUnchecked is the leak of a cache hit whose records cannot say
// which scope its answer was built for (an interchange CSV without a leak
// column): neither a leak nor shown to be none.
const LeakUnchecked = "unchecked"

const (
	OutcomeOK           = "ok"
	OutcomeError        = "error"
	OutcomeTimeout      = "timeout"
	OutcomeContractFail = "contract_fail"
	OutcomeCancelled    = "cancelled"
)

// Misroute kinds, judged by what the other model would have done.
const (
	MisrouteUnder    = "under"    // sent to the small model, which failed where the large one passes
	MisrouteOver     = "over"     // sent to the large model where the small one would have passed
	MisrouteHopeless = "hopeless" // both fail
)

// Record is one request of one arm in one repeat: one line of records.jsonl.
// Times are absolute; *_ms fields are durations in milliseconds.
// E2EMs is measured from the intended send time, so queueing counts.
type Record struct {
	RunID  string `json:"run_id"`
	Arm    string `json:"arm"`
	Repeat int    `json:"repeat"`
	Seq    int    `json:"seq"`              // position in the arrival schedule
	Warmup bool   `json:"warmup,omitempty"` // warm-up requests are excluded from statistics
	// Shard is "I/N" when the run played one slice of the schedule (crab
	// run --shard); "" for a whole run.
	Shard string `json:"shard,omitempty"`
	// Block is the switchback block the request was sent in: 1, 2, ... in
	// time order within a pass, each block one arm's; 0 in other orders.
	// BurnIn marks a request sent in its block's first burn_in: it counts
	// for quality, cost and failures, but not in the latency comparison,
	// since the previous block's requests may still have held the backend.
	Block  int  `json:"block,omitempty"`
	BurnIn bool `json:"burn_in,omitempty"`

	TaskID     string `json:"task_id"`
	Group      string `json:"group"`
	Difficulty string `json:"difficulty,omitempty"`
	// Scope is the request's: tenant always written, its other fields
	// when set.
	model.Scope

	IntendedAt  time.Time `json:"intended_at,omitzero"`
	SentAt      time.Time `json:"sent_at,omitzero"`
	FirstByteAt time.Time `json:"first_byte_at,omitzero"`
	DoneAt      time.Time `json:"done_at,omitzero"`

	LagMs      float64 `json:"lag_ms"`      // intended send to release by the generator: the load generator's own lateness
	QueueMs    float64 `json:"queue_ms"`    // release to actual send: the hand-off to a worker, and the wait for a slot when SlotWait
	CacheMs    float64 `json:"cache_ms"`    // key building and lookup
	RouteMs    float64 `json:"route_ms"`    // scoring and routing
	ModelMs    float64 `json:"model_ms"`    // inside model calls, every attempt
	TTFTMs     float64 `json:"ttft_ms"`     // intended send to first content byte
	ValidateMs float64 `json:"validate_ms"` // contract validation, every attempt
	E2EMs      float64 `json:"e2e_ms"`      // intended send to validated result (or to failure)
	// SlotWait is set when every concurrency slot was taken as the request
	// was released, so that its queue_ms includes waiting for a slot: the
	// cap made the open loop partly closed. Without it queue_ms is only the
	// hand-off from the generator to an idle worker.
	SlotWait bool `json:"slot_wait,omitempty"`

	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`

	Cache         string `json:"cache,omitempty"` // hit, miss, bypass
	Leak          string `json:"leak,omitempty"`  // leak kind of a hit served from another scope
	ScopeMismatch bool   `json:"scope_mismatch,omitempty"`
	// Similarity is, on a semantic cache's hit, the cosine similarity of
	// the request to the entry served: exactly 1 when their normalised
	// texts are the same (a hit an exact cache would serve too), below 1
	// otherwise; CacheOrigin the task the entry was
	// built for; FalseHit that the served answer was not the one this task
	// should get (see the runner's falseHit).
	Similarity  float64 `json:"similarity,omitempty"`
	CacheOrigin string  `json:"cache_origin,omitempty"`
	FalseHit    bool    `json:"false_hit,omitempty"`
	Model       string  `json:"model,omitempty"`
	RouteScore  float64 `json:"route_score"`
	Routed      bool    `json:"routed,omitempty"`
	// RouteFallback: the router's scorer failed, and the request was
	// routed on the scorer's fallback score.
	RouteFallback bool   `json:"route_fallback,omitempty"`
	Misroute      string `json:"misroute,omitempty"`
	Escalated     bool   `json:"escalated,omitempty"`
	Attempts      int    `json:"attempts"`

	TokensIn  int     `json:"tokens_in"`
	TokensOut int     `json:"tokens_out"`
	Cost      float64 `json:"cost"` // every attempt of this request
	// ShadowCost is what the evaluator spent asking the other model to judge
	// a routing decision: evaluation overhead, never part of Cost.
	ShadowCost float64 `json:"shadow_cost,omitempty"`
	// EscalationCost is the part of Cost spent after a cascade escalated
	// the request (the larger model's call).
	EscalationCost float64 `json:"escalation_cost,omitempty"`

	// Contract is the hash (Contract.Hash) of the contract the answer was
	// validated against: records validated against different contracts
	// measure different work.
	Contract   string   `json:"contract,omitempty"`
	ContractOK bool     `json:"contract_ok"`
	Violations []string `json:"violations,omitempty"`
	// Category and Expected are read from records of older crab versions,
	// which wrote the triage answer's category and the expected one; crab
	// no longer writes them (grade_reason says what a grade found).
	Category string `json:"category,omitempty"`
	Expected string `json:"expected,omitempty"`
	Correct  bool   `json:"correct"` // the graders accept the answer against the task's expected answer
	Pass     bool   `json:"pass"`
	// GradeReason says why the graders did not accept the answer (the
	// first failed check, or an external grader's reason).
	GradeReason string `json:"grade_reason,omitempty"`
	// GradeError is set when a grader could not decide (a command that
	// timed out, crashed or printed no verdict; a judge that failed): a
	// grading error, counted in the report and never a pass.
	GradeError string `json:"grade_error,omitempty"`
	// GradeCost and GradeMs are what the external graders cost (a judge
	// model's tokens) and took: evaluation overhead, never part of Cost
	// or of any latency.
	GradeCost float64 `json:"grade_cost,omitempty"`
	GradeMs   float64 `json:"grade_ms,omitempty"`
	// Unmeasured names the figures the record's source did not measure
	// (Figures: FigureCost, FigureQuality, FigureTokens, ...): their fields
	// hold 0 or false only as placeholders, and reports show "-". Crab's
	// own runs measure everything but what calls to a model whose price
	// the experiment does not declare cost (cost, shadow_cost, grade_cost).
	Unmeasured []string `json:"unmeasured,omitempty"`

	Output string `json:"output,omitempty"` // the answer as delivered
}

// JSONLWriter returns an Emit function writing one JSON object per line:
// what a json.Encoder with HTML escaping off writes, through
// Record.AppendJSON (the encoder itself only for a record AppendJSON
// declines, which then fails as the encoder does). Like every Emit, the
// function must not be called from two goroutines at once.
func JSONLWriter(w io.Writer) func(Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	var buf []byte
	return func(rec Record) error {
		b, ok := rec.AppendJSON(buf[:0])
		if !ok {
			return enc.Encode(rec)
		}
		buf = append(b, '\n')
		_, err := w.Write(buf)
		return err
	}
}

// ArmNameFault says why an importer cannot name an arm name ("" when it
// can): a control character (NUL, a newline, an escape sequence) or a
// bidirectional override, which would corrupt or disguise every file and
// log line that shows the arm. Reports escape such names in records crab
// reads; an importer, which makes the name up from a file name or a cell,
// refuses them instead.
func ArmNameFault(name string) string {
	for i, r := range name {
		switch {
		case r == utf8.RuneError:
			return fmt.Sprintf("not valid UTF-8 at byte %d (or U+FFFD, which invalid bytes become)", i)
		case unicode.IsControl(r):
			return fmt.Sprintf("holds the control character %U at byte %d: an arm name is printable text", r, i)
		case (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return fmt.Sprintf("holds the bidirectional control %U at byte %d: an arm name is printable text", r, i)
		}
	}
	return ""
}
