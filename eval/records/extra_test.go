package records

import (
	"time"

	"github.com/crab-testbed/crab/model"
)

// extraRecord is Record with one field more (Priority, after the scope): the
// struct of TestAddingAField, whose codec codec_extra_test.go is the
// generator's output for it.
type extraRecord struct {
	RunID      string `json:"run_id"`
	Arm        string `json:"arm"`
	Repeat     int    `json:"repeat"`
	Seq        int    `json:"seq"`
	Warmup     bool   `json:"warmup,omitempty"`
	Shard      string `json:"shard,omitempty"`
	Block      int    `json:"block,omitempty"`
	BurnIn     bool   `json:"burn_in,omitempty"`
	TaskID     string `json:"task_id"`
	Group      string `json:"group"`
	Difficulty string `json:"difficulty,omitempty"`
	model.Scope
	Priority       int       `json:"priority,omitempty"`
	IntendedAt     time.Time `json:"intended_at,omitzero"`
	SentAt         time.Time `json:"sent_at,omitzero"`
	FirstByteAt    time.Time `json:"first_byte_at,omitzero"`
	DoneAt         time.Time `json:"done_at,omitzero"`
	LagMs          float64   `json:"lag_ms"`
	QueueMs        float64   `json:"queue_ms"`
	CacheMs        float64   `json:"cache_ms"`
	RouteMs        float64   `json:"route_ms"`
	ModelMs        float64   `json:"model_ms"`
	TTFTMs         float64   `json:"ttft_ms"`
	ValidateMs     float64   `json:"validate_ms"`
	E2EMs          float64   `json:"e2e_ms"`
	SlotWait       bool      `json:"slot_wait,omitempty"`
	Outcome        string    `json:"outcome"`
	Error          string    `json:"error,omitempty"`
	Cache          string    `json:"cache,omitempty"`
	Leak           string    `json:"leak,omitempty"`
	ScopeMismatch  bool      `json:"scope_mismatch,omitempty"`
	Similarity     float64   `json:"similarity,omitempty"`
	CacheOrigin    string    `json:"cache_origin,omitempty"`
	FalseHit       bool      `json:"false_hit,omitempty"`
	Model          string    `json:"model,omitempty"`
	RouteScore     float64   `json:"route_score"`
	Routed         bool      `json:"routed,omitempty"`
	RouteFallback  bool      `json:"route_fallback,omitempty"`
	Misroute       string    `json:"misroute,omitempty"`
	Escalated      bool      `json:"escalated,omitempty"`
	Attempts       int       `json:"attempts"`
	TokensIn       int       `json:"tokens_in"`
	TokensOut      int       `json:"tokens_out"`
	Cost           float64   `json:"cost"`
	ShadowCost     float64   `json:"shadow_cost,omitempty"`
	EscalationCost float64   `json:"escalation_cost,omitempty"`
	Contract       string    `json:"contract,omitempty"`
	ContractOK     bool      `json:"contract_ok"`
	Violations     []string  `json:"violations,omitempty"`
	Category       string    `json:"category,omitempty"`
	Expected       string    `json:"expected,omitempty"`
	Correct        bool      `json:"correct"`
	Pass           bool      `json:"pass"`
	GradeReason    string    `json:"grade_reason,omitempty"`
	GradeError     string    `json:"grade_error,omitempty"`
	GradeCost      float64   `json:"grade_cost,omitempty"`
	GradeMs        float64   `json:"grade_ms,omitempty"`
	Unmeasured     []string  `json:"unmeasured,omitempty"`
	Output         string    `json:"output,omitempty"`
}
