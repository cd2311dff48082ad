package eval

import "time"

// Outcomes: every scheduled request ends in exactly one.
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
	QueueMs    float64 `json:"queue_ms"`    // release to actual send: waiting for a slot under the concurrency cap
	CacheMs    float64 `json:"cache_ms"`    // key building and lookup
	RouteMs    float64 `json:"route_ms"`    // scoring and routing
	ModelMs    float64 `json:"model_ms"`    // inside model calls, every attempt
	TTFTMs     float64 `json:"ttft_ms"`     // intended send to first content byte
	ValidateMs float64 `json:"validate_ms"` // contract validation, every attempt
	E2EMs      float64 `json:"e2e_ms"`      // intended send to validated result (or to failure)

	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`

	Cache         string  `json:"cache,omitempty"` // hit, miss, bypass
	Leak          string  `json:"leak,omitempty"`  // leak kind of a hit served from another scope
	ScopeMismatch bool    `json:"scope_mismatch,omitempty"`
	Model         string  `json:"model,omitempty"`
	RouteScore    float64 `json:"route_score"`
	Routed        bool    `json:"routed,omitempty"`
	Misroute      string  `json:"misroute,omitempty"`
	Escalated     bool    `json:"escalated,omitempty"`
	Attempts      int     `json:"attempts"`

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
	Category   string   `json:"category,omitempty"` // the answer's category
	Expected   string   `json:"expected,omitempty"` // the task's expected category
	Correct    bool     `json:"correct"`
	Pass       bool     `json:"pass"`

	Output string `json:"output,omitempty"` // the answer as delivered
}
