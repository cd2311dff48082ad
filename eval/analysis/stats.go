package analysis

import (
	"errors"
)

// Errors Summarize returns.
var (
	// ErrNoRecords: there is nothing to summarize (no records, or an arm
	// made only of warm-up requests).
	ErrNoRecords = errors.New("analysis: no records to summarize")
	// ErrUnknownBaseline: the requested baseline arm is not in the records;
	// the message lists the arms that are.
	ErrUnknownBaseline = errors.New("analysis: unknown baseline arm")
)

// Verdicts an arm can get.
const (
	VerdictBaseline = "baseline"
	VerdictAccept   = "accept"
	VerdictReject   = "reject"
)

// DefaultResamples is the number of bootstrap resamples when Options leaves
// it zero.
const DefaultResamples = 2000

// Options tune Summarize.
type Options struct {
	// Gate is the decision rule; nil means the defaults (see GateConfig).
	Gate *GateConfig
	// Incomplete, when set, says why the records cannot hold a whole run
	// (e.g. its manifest still says running: the process died); every
	// candidate's verdict is then incomplete.
	Incomplete string
	// StoreErrors counts, by arm, the cache store calls that failed during
	// the run (from the manifest's pass metrics; see
	// eval.StoreErrors): the report warns what they did to the hit rate.
	StoreErrors map[string]int
	// Warnings are said beside the decision's own (e.g. requests a
	// recording could not answer).
	Warnings []string
	// Baseline names the arm candidates are compared against. Empty means
	// the arm named "baseline" if there is one, else the first arm seen.
	Baseline string
	// Seed seeds the bootstrap intervals; the same seed gives the same
	// intervals.
	Seed int64
	// Resamples is the number of bootstrap resamples (default 2000).
	Resamples int
	// LargeModels names the models a router's "large" choice maps to, for
	// routed_large_share. Empty: the model with the highest mean route score
	// among routed, non-escalated requests (the router sends high scores to
	// the large model); with a single routed model the share is left out.
	LargeModels []string
	// AllowContractChange compares arms whose records were validated
	// against different contracts (Record.Contract) as if they did the same
	// work. Without it such a candidate is rejected as a comparison of
	// different work; with it the difference is only warned about.
	AllowContractChange bool
	// PassRule is the pass rule the records were graded by, in words, for
	// the notes; empty (records from elsewhere) says nothing.
	PassRule string
	// Holdout, when set, says which tasks were left out of the run because
	// tuned values were fitted on them, for the notes.
	Holdout string
	// Design is how the run shared its backends between arms (order,
	// declared rate, which models share a backend); nil: unknown.
	Design *Design
}

// Summary is everything `crab report` prints: per arm figures, the paired
// comparison inside each candidate, and the decision.
type Summary struct {
	Baseline string       `json:"baseline"`
	Arms     []ArmSummary `json:"arms"`
	Decision Decision     `json:"decision"`
	Notes    []string     `json:"notes,omitempty"`
	// Clusters are windows of the run in which errors and timeouts
	// clustered (an outage or drift); arms with failures in one get an
	// inconclusive verdict.
	Clusters []Cluster `json:"clusters,omitempty"`
	// Stalls are windows of the run in which every arm's latency rose far
	// above its usual level (a backend that stalled or paused).
	Stalls []Stall `json:"stalls,omitempty"`
	// Timed is set when every record carries its send time.
	Timed bool `json:"timed"`
	// Interference tests, for every arm at every backend another arm
	// called too, whether its latency rose with the other arms' load.
	Interference []Interference `json:"interference,omitempty"`
	// Noise is the run's noise floor: how often identical calls of a task
	// disagree on whether it passes (source none when not measured).
	Noise *Noise `json:"noise"`

	family family // the run's accept decisions, for the notes
}

// ArmSummary is the figures of one arm over its non-warm-up requests, under
// the documented summary.json names. Latency figures are in milliseconds; the
// all-requests ones (p50_ms ... mean_ms) count a failed request at the time
// it ended, the ok_* ones count successful requests only.
//
// Figures that do not exist for the data are null or left out rather than
// zero: cost_per_pass is null when nothing passed (JSON has no infinity),
// ok_* are left out when no request succeeded, ttft_* when no record has a
// time to first byte; the cache fields appear only when requests went
// through a cache, the routing fields only when requests were routed.
type ArmSummary struct {
	Name     string `json:"name"`
	N        int    `json:"n"`      // requests counted (every task × repeat, warm-up excluded)
	Warmup   int    `json:"warmup"` // warm-up requests left out of every figure
	OK       int    `json:"ok"`
	Failed   int    `json:"failed"` // n - ok: every other outcome, timeouts included
	Timeouts int    `json:"timeouts"`
	// Cancelled counts requests an interruption cancelled: part of n and
	// failed, but left out of every latency figure.
	Cancelled int `json:"cancelled,omitempty"`
	Pass      int `json:"pass"`
	// GradeErrors counts answers a grader could not decide (counted as
	// not passing); GradeCost is what the graders cost (a judge model),
	// never part of Cost.
	GradeErrors int     `json:"grade_errors,omitempty"`
	GradeCost   float64 `json:"grade_cost,omitempty"`

	// The latency figures are over the requests that measured a latency:
	// LatencyUnmeasured counts those left out (failures whose source gave
	// no duration). When no request measured one, the arm's latency is
	// unmeasured (Measured(records.FigureLatency) is false): "-" and null.
	LatencyUnmeasured int `json:"latency_unmeasured,omitempty"`

	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P95Ms  float64 `json:"p95_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"`
	MinMs  float64 `json:"min_ms"`

	OKP50Ms  *float64 `json:"ok_p50_ms,omitempty"`
	OKP95Ms  *float64 `json:"ok_p95_ms,omitempty"`
	OKMeanMs *float64 `json:"ok_mean_ms,omitempty"`

	Outcomes map[string]int `json:"outcomes"` // outcome → requests, only outcomes that occur
	Cost     float64        `json:"cost"`     // every request and attempt, failed ones included
	// CostPerPass is Cost / Pass, unrounded. Null when nothing passed.
	CostPerPass *float64 `json:"cost_per_pass"`

	TTFTP50Ms     *float64 `json:"ttft_p50_ms,omitempty"` // over records with a first byte
	TTFTP95Ms     *float64 `json:"ttft_p95_ms,omitempty"`
	TokensOutMean float64  `json:"tokens_out_mean"`

	// Unmeasured names the figures some of the arm's records did not
	// measure (records.Figures: cost, quality, tokens, ttft): the arm's
	// figures built on them are unmeasured, not 0 (see Measured). Left
	// out when the records measured everything, as crab's own do.
	Unmeasured []string `json:"unmeasured,omitempty"`

	Verdict string                  `json:"verdict"`
	Reasons []string                `json:"reasons"`
	Groups  map[string]GroupSummary `json:"groups"` // records with an empty group are left out

	*CacheStats
	*RouteStats

	// ShadowCost is what judging routing decisions cost (shadow calls to
	// the other model): evaluation overhead, never part of Cost.
	ShadowCost float64 `json:"shadow_cost,omitempty"`
	// SilentViolations counts requests recorded ok whose answer broke the
	// contract: an invalid answer let through. Any of them rejects an arm.
	SilentViolations int `json:"silent_violations"`
	Escalated        int `json:"escalated,omitempty"`
	// EscalationCost is what escalated requests spent after escalating
	// (part of Cost).
	EscalationCost float64 `json:"escalation_cost,omitempty"`
	Attempts       int     `json:"attempts"` // model calls, retries and escalations included
	// Contracts are the distinct contract hashes the arm's records were
	// validated against (Record.Contract), sorted; left out when no record
	// names one (e.g. CSV without a contract column).
	Contracts []string `json:"contracts,omitempty"`

	Load        *LoadStats   `json:"load,omitempty"`        // schedule lag and queue time
	Uncertainty *Uncertainty `json:"uncertainty,omitempty"` // intervals of p50, p95 and cost per pass
	Paired      *Paired      `json:"paired,omitempty"`      // candidates only
	// Quality is the quality rule's figures (candidates whose quality
	// was measured): the paired difference in pass rate and its interval.
	Quality *QualityCheck `json:"quality,omitempty"`
	// Rework is what the arm's failures cost to redo by hand, when the
	// experiment declares it (its cost is already in Cost).
	Rework *ReworkStats `json:"rework,omitempty"`
	// Outside is the paired comparison over the pairs sent outside the
	// run's stall and failure windows (nil when there are none): a
	// verdict that does not hold there rests on those windows.
	Outside  *Paired `json:"-"`
	TailNote string  `json:"tail_note,omitempty"` // set when a tail percentile is the sample maximum

	// BurnIn counts requests sent in the burn-in of their switchback
	// block: part of n, quality, cost and failures, but left out of every
	// latency figure (the previous block's requests may still have held
	// the backend).
	BurnIn int `json:"burn_in,omitempty"`
	// CarryOver counts requests of a switchback block sent after its
	// burn-in while another arm's request to the same backend was still
	// in flight. They stay in the latency figures; the interference test
	// says whether their latency moved with the other arms' load.
	CarryOver int `json:"carry_over,omitempty"`
	// Stalled counts requests of a switchback that waited through a stall
	// of their backend (a stretch in which it answered nothing while
	// requests waited), or were sent before its backlog cleared: left out
	// of every latency figure, on every arm alike.
	Stalled int `json:"stalled,omitempty"`
}

// GroupSummary is one input group (short, long, tool) of an arm.
type GroupSummary struct {
	N     int     `json:"n"`
	Pass  int     `json:"pass"`
	P50Ms float64 `json:"p50_ms"`
	P95Ms float64 `json:"p95_ms"`
}

// CacheStats pairs hit rate with what a hit saves and whether it was right
// . Present only for arms whose requests went through a cache.
type CacheStats struct {
	CacheRequests int      `json:"cache_requests"` // requests with a cache status (hit, miss or bypass)
	Hits          int      `json:"hits"`
	HitRate       float64  `json:"hit_rate"` // hits / cache_requests
	HitP50Ms      *float64 `json:"hit_p50_ms,omitempty"`
	HitP95Ms      *float64 `json:"hit_p95_ms,omitempty"`
	MissP50Ms     *float64 `json:"miss_p50_ms,omitempty"`
	MissP95Ms     *float64 `json:"miss_p95_ms,omitempty"`
	// SavedPerHit is the share of end-to-end time a hit saves against a
	// miss: 1 - hit_p50/miss_p50.
	SavedPerHit *float64       `json:"saved_per_hit,omitempty"`
	Leaks       map[string]int `json:"leaks"` // leak kind → hits served from another scope; empty when none
	// LeaksUnchecked counts hits whose records cannot say which scope the
	// answer was built for (an interchange CSV without a leak column):
	// their leaks were not measured, which is not the same as none.
	LeaksUnchecked  int `json:"leaks_unchecked,omitempty"`
	ScopeMismatches int `json:"scope_mismatches"`
	// SemanticHits are hits of a semantic cache (served by similarity);
	// FalseHits those that served an answer the task should not get;
	// FalseHitUpper95 the exact one-sided 95% upper bound on the false
	// hits per semantic hit. All left out for exact caches.
	SemanticHits    int      `json:"semantic_hits,omitempty"`
	FalseHits       int      `json:"false_hits,omitempty"`
	FalseHitUpper95 *float64 `json:"false_hit_upper_95,omitempty"`
	// SimilarityHits are the semantic hits an exact cache would not have
	// served (the request's normalised text differs from the entry's),
	// SimilarityFalseHits the false hits among them, and
	// SimilarityFalseHitUpper95 the exact one-sided 95% upper bound on
	// false hits per similarity hit: the risk the similarity threshold
	// itself adds, which exact repeats cannot dilute. The bound is left
	// out (nil) when there is no similarity hit: not measured.
	SimilarityHits            int      `json:"similarity_hits,omitempty"`
	SimilarityFalseHits       int      `json:"similarity_false_hits,omitempty"`
	SimilarityFalseHitUpper95 *float64 `json:"similarity_false_hit_upper_95,omitempty"`
	// Cold holds the same figures over the warm-up requests, when the
	// experiment warms the cache: the cache while cold, beside the warm
	// figures above (which, like every figure, leave warm-up out).
	Cold *CacheStats `json:"cold,omitempty"`
}

// RouteStats is what a router decided. Present only for arms with routed
// requests.
type RouteStats struct {
	Routed       int            `json:"routed"`
	RoutedModels map[string]int `json:"routed_models"` // model → routed requests it answered
	// RoutedLargeShare is the share of routed requests answered by the large
	// model (see Options.LargeModels); left out when it cannot be told.
	RoutedLargeShare *float64       `json:"routed_large_share,omitempty"`
	Misroutes        map[string]int `json:"misroutes"` // under, over, hopeless → requests; nil (null) when quality is unmeasured
	// ScorerFallbacks counts routed requests whose scorer failed, routed
	// on the scorer's fallback score instead.
	ScorerFallbacks int `json:"scorer_fallbacks,omitempty"`
}

// LeaksMeasured reports whether every cache hit of the arm was checked
// for leaks.
func (a *ArmSummary) LeaksMeasured() bool { return a.CacheStats == nil || a.LeaksUnchecked == 0 }

// LeakCount is the number of leaking hits of any kind.
func (a *ArmSummary) LeakCount() int {
	if a.CacheStats == nil {
		return 0
	}
	n := 0
	for _, v := range a.Leaks {
		n += v
	}
	return n
}

// gate is the gate in force, defaults filled.
func (o Options) gate() GateConfig {
	if o.Gate == nil {
		return GateConfig{}.Defaults()
	}
	return o.Gate.Defaults()
}
