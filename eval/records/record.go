package records

import (
	"encoding/json"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/crab-testbed/crab/internal/jsonw"
)

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

	TaskID     string `json:"task_id"`
	Group      string `json:"group"`
	Difficulty string `json:"difficulty,omitempty"`
	Tenant     string `json:"tenant"`
	Permission string `json:"permission,omitempty"`
	Lang       string `json:"lang,omitempty"`
	DocVersion string `json:"doc_version,omitempty"`

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

	Output string `json:"output,omitempty"` // the answer as delivered
}

// AppendJSON appends rec as one JSON object, byte for byte what
// encoding/json writes for it with HTML escaping off (no trailing newline),
// and reports false — leaving dst as it was — when encoding/json would
// refuse it (a NaN or infinite duration or cost, a time outside the years
// 0 to 9999): records are written once per request, and the reflective
// encoder costs several times more.
func (rec *Record) AppendJSON(dst []byte) ([]byte, bool) {
	n0 := len(dst)
	b := append(dst, `{"run_id":`...)
	b = jsonw.AppendString(b, rec.RunID, false)
	b = append(b, `,"arm":`...)
	b = jsonw.AppendString(b, rec.Arm, false)
	b = append(b, `,"repeat":`...)
	b = strconv.AppendInt(b, int64(rec.Repeat), 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(rec.Seq), 10)
	if rec.Warmup {
		b = append(b, `,"warmup":true`...)
	}
	b = appendOmitString(b, `,"shard":`, rec.Shard)
	b = append(b, `,"task_id":`...)
	b = jsonw.AppendString(b, rec.TaskID, false)
	b = append(b, `,"group":`...)
	b = jsonw.AppendString(b, rec.Group, false)
	b = appendOmitString(b, `,"difficulty":`, rec.Difficulty)
	b = append(b, `,"tenant":`...)
	b = jsonw.AppendString(b, rec.Tenant, false)
	b = appendOmitString(b, `,"permission":`, rec.Permission)
	b = appendOmitString(b, `,"lang":`, rec.Lang)
	b = appendOmitString(b, `,"doc_version":`, rec.DocVersion)
	ok := true
	b, ok = appendTime(b, `,"intended_at":`, rec.IntendedAt, ok)
	b, ok = appendTime(b, `,"sent_at":`, rec.SentAt, ok)
	b, ok = appendTime(b, `,"first_byte_at":`, rec.FirstByteAt, ok)
	b, ok = appendTime(b, `,"done_at":`, rec.DoneAt, ok)
	for _, f := range [...]struct {
		key string
		v   float64
	}{
		{`,"lag_ms":`, rec.LagMs}, {`,"queue_ms":`, rec.QueueMs}, {`,"cache_ms":`, rec.CacheMs}, {`,"route_ms":`, rec.RouteMs},
		{`,"model_ms":`, rec.ModelMs}, {`,"ttft_ms":`, rec.TTFTMs}, {`,"validate_ms":`, rec.ValidateMs}, {`,"e2e_ms":`, rec.E2EMs},
	} {
		b, ok = appendFloat(b, f.key, f.v, ok)
	}
	if rec.SlotWait {
		b = append(b, `,"slot_wait":true`...)
	}
	b = append(b, `,"outcome":`...)
	b = jsonw.AppendString(b, rec.Outcome, false)
	b = appendOmitString(b, `,"error":`, rec.Error)
	b = appendOmitString(b, `,"cache":`, rec.Cache)
	b = appendOmitString(b, `,"leak":`, rec.Leak)
	if rec.ScopeMismatch {
		b = append(b, `,"scope_mismatch":true`...)
	}
	if rec.Similarity != 0 {
		b, ok = appendFloat(b, `,"similarity":`, rec.Similarity, ok)
	}
	b = appendOmitString(b, `,"cache_origin":`, rec.CacheOrigin)
	if rec.FalseHit {
		b = append(b, `,"false_hit":true`...)
	}
	b = appendOmitString(b, `,"model":`, rec.Model)
	b, ok = appendFloat(b, `,"route_score":`, rec.RouteScore, ok)
	if rec.Routed {
		b = append(b, `,"routed":true`...)
	}
	if rec.RouteFallback {
		b = append(b, `,"route_fallback":true`...)
	}
	b = appendOmitString(b, `,"misroute":`, rec.Misroute)
	if rec.Escalated {
		b = append(b, `,"escalated":true`...)
	}
	b = append(b, `,"attempts":`...)
	b = strconv.AppendInt(b, int64(rec.Attempts), 10)
	b = append(b, `,"tokens_in":`...)
	b = strconv.AppendInt(b, int64(rec.TokensIn), 10)
	b = append(b, `,"tokens_out":`...)
	b = strconv.AppendInt(b, int64(rec.TokensOut), 10)
	b, ok = appendFloat(b, `,"cost":`, rec.Cost, ok)
	if rec.ShadowCost != 0 {
		b, ok = appendFloat(b, `,"shadow_cost":`, rec.ShadowCost, ok)
	}
	if rec.EscalationCost != 0 {
		b, ok = appendFloat(b, `,"escalation_cost":`, rec.EscalationCost, ok)
	}
	b = appendOmitString(b, `,"contract":`, rec.Contract)
	b = appendBool(b, `,"contract_ok":`, rec.ContractOK)
	if len(rec.Violations) > 0 {
		b = append(b, `,"violations":[`...)
		for i, v := range rec.Violations {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonw.AppendString(b, v, false)
		}
		b = append(b, ']')
	}
	b = appendOmitString(b, `,"category":`, rec.Category)
	b = appendOmitString(b, `,"expected":`, rec.Expected)
	b = appendBool(b, `,"correct":`, rec.Correct)
	b = appendBool(b, `,"pass":`, rec.Pass)
	b = appendOmitString(b, `,"grade_reason":`, rec.GradeReason)
	b = appendOmitString(b, `,"grade_error":`, rec.GradeError)
	if rec.GradeCost != 0 {
		b, ok = appendFloat(b, `,"grade_cost":`, rec.GradeCost, ok)
	}
	if rec.GradeMs != 0 {
		b, ok = appendFloat(b, `,"grade_ms":`, rec.GradeMs, ok)
	}
	b = appendOmitString(b, `,"output":`, rec.Output)
	b = append(b, '}')
	if !ok {
		return b[:n0], false
	}
	return b, true
}

func appendOmitString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return jsonw.AppendString(append(b, key...), s, false)
}

func appendBool(b []byte, key string, v bool) []byte {
	b = append(b, key...)
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendTime appends key and t as encoding/json writes a time.Time
// (RFC 3339 with nanoseconds), nothing for the zero time (omitzero); ok
// turns false for a time encoding/json refuses.
func appendTime(b []byte, key string, t time.Time, ok bool) ([]byte, bool) {
	if t.IsZero() {
		return b, ok
	}
	b = append(b, key...)
	b = append(b, '"')
	n0 := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	switch {
	case len(b)-n0 < len("9999-") || b[n0+len("9999")] != '-':
		ok = false // year outside [0,9999]
	case b[len(b)-1] != 'Z':
		c := b[len(b)-len("Z07:00")]
		h := b[len(b)-len("07:00"):]
		if ('0' <= c && c <= '9') || 10*(h[0]-'0')+(h[1]-'0') >= 24 {
			ok = false // zone offset hour outside [0,23]
		}
	}
	return append(b, '"'), ok
}

// appendFloat appends key and f as encoding/json writes a float64; ok
// turns false for NaN and infinities, which it refuses.
func appendFloat(b []byte, key string, f float64, ok bool) ([]byte, bool) {
	b = append(b, key...)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return append(b, '0'), false
	}
	return jsonw.AppendFloat(b, f, 64), ok
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
