package analysis

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/binom"
	"github.com/crab-testbed/crab/internal/quantile"
	"github.com/crab-testbed/crab/internal/words"
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
	// Rework is what the arm's failures cost to redo by hand, when the
	// experiment declares it (its cost is already in Cost).
	Rework *ReworkStats `json:"rework,omitempty"`
	// Outside is the paired comparison over the pairs sent outside the
	// run's stall and failure windows (nil when there are none): a
	// verdict that does not hold there rests on those windows.
	Outside  *Paired `json:"-"`
	TailNote string  `json:"tail_note,omitempty"` // set when a tail percentile is the sample maximum
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
	Misroutes        map[string]int `json:"misroutes"` // under, over, hopeless → requests
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

// Summarize computes every arm's figures, compares each candidate with the
// baseline task by task, and applies the quality gate. Arms are listed in
// the order they first appear in set, the baseline first.
func Summarize(set *records.RecordSet, opt Options) (*Summary, error) {
	if opt.Resamples <= 0 {
		opt.Resamples = DefaultResamples
	}
	t := set.Symbols()
	var order []string
	byArm := map[string][]*records.Rec{}
	warm := map[string]int{}
	warmRecs := map[string][]*records.Rec{} // for the cold-cache figures
	repeats := map[int]bool{}
	// Each arm's slice is made to measure: on millions of records the
	// slack of growing ones would be the largest thing allocated here.
	perArm := map[records.Sym]int{}
	set.Each(func(r *records.Rec) {
		if !t.Attrs(r).Warmup {
			perArm[r.Arm]++
		}
	})
	set.Each(func(r *records.Rec) {
		if _, ok := byArm[t.Str(r.Arm)]; !ok {
			order = append(order, t.Str(r.Arm))
			byArm[t.Str(r.Arm)] = make([]*records.Rec, 0, perArm[r.Arm])
		}
		if t.Attrs(r).Warmup {
			warm[t.Str(r.Arm)]++
			warmRecs[t.Str(r.Arm)] = append(warmRecs[t.Str(r.Arm)], r)
			return
		}
		byArm[t.Str(r.Arm)] = append(byArm[t.Str(r.Arm)], r)
		repeats[t.Attrs(r).Repeat] = true
	})
	if len(order) == 0 {
		return nil, ErrNoRecords
	}
	base := opt.Baseline
	if base == "" {
		base = order[0]
		if _, ok := byArm["baseline"]; ok {
			base = "baseline"
		}
	} else if _, ok := byArm[base]; !ok {
		return nil, fmt.Errorf("%w %q (arms: %s)", ErrUnknownBaseline, base, strings.Join(order, ", "))
	}
	for _, name := range order {
		if len(byArm[name]) == 0 {
			return nil, fmt.Errorf("%w: arm %q has only warm-up records", ErrNoRecords, name)
		}
	}
	arms := []string{base}
	for _, name := range order {
		if name != base {
			arms = append(arms, name)
		}
	}

	s := &Summary{Baseline: base}
	large := map[string]bool{}
	for _, m := range opt.LargeModels {
		large[m] = true
	}
	g := opt.gate()
	rework := map[string]*ReworkStats{}
	if g.Rework != nil {
		for _, name := range arms {
			rework[name] = applyRework(t, g.Rework, byArm[name])
		}
	}
	for _, name := range arms {
		s.Arms = append(s.Arms, summarizeArm(t, name, byArm[name], warm[name], large))
		s.Arms[len(s.Arms)-1].Rework = rework[name]
		coldCache(t, &s.Arms[len(s.Arms)-1], warmRecs[name], large)
		s.Arms[len(s.Arms)-1].Uncertainty = uncertainty(t, byArm[name], opt.Seed)
	}
	multiRepeat := len(repeats) > 1
	var slo *SLO
	if g.Objective == ObjectiveGoodput {
		slo = &g.SLO
	}
	for i := 1; i < len(s.Arms); i++ {
		p := comparePaired(t, byArm[base], byArm[s.Arms[i].Name], PairOptions{Seed: opt.Seed, Resamples: opt.Resamples, ShowRepeat: multiRepeat, SLO: slo})
		s.Arms[i].Paired = &p
	}
	s.Clusters = failureClusters(t, byArm, arms)
	s.Stalls = latencyStalls(t, byArm, arms)
	s.Timed = true
	for _, name := range arms {
		for _, r := range byArm[name] {
			s.Timed = s.Timed && t.Attrs(r).Timed
		}
	}
	// A window excuses a verdict only when the baseline did not send in
	// it or was hit there too: where the baseline sent at the same time
	// and fared well, the failures or the slowness are the candidate's own.
	var ws []window
	for _, c := range s.Clusters {
		w := window{c.startNs, c.endNs}
		sent, failed, _ := inWindow(t, byArm[base], w)
		if sent == 0 || float64(failed)/float64(sent) >= 0.5*float64(c.Failures)/float64(max(c.Requests, 1)) {
			ws = append(ws, w)
		}
	}
	for _, st := range s.Stalls {
		w := window{st.startNs, st.endNs}
		sent, _, p50 := inWindow(t, byArm[base], w)
		if sent == 0 || p50 >= (st.RunP50Ms+st.P50Ms)/2 {
			ws = append(ws, w)
		}
	}
	if len(ws) > 0 {
		for i := 1; i < len(s.Arms); i++ {
			b, c := outsideWindows(t, byArm[base], byArm[s.Arms[i].Name], ws)
			o := comparePaired(t, b, c, PairOptions{Seed: opt.Seed, Resamples: opt.Resamples, ShowRepeat: multiRepeat, SLO: slo})
			s.Arms[i].Outside = &o
		}
	}
	for _, te := range set.Torn() {
		why := te.Error()
		if opt.Incomplete != "" {
			why = opt.Incomplete + "; " + why
		}
		opt.Incomplete = why
	}
	decide(s, opt)
	answerWarnings(t, s, byArm)
	storeWarnings(s, opt.StoreErrors)

	s.Notes = append(s.Notes,
		"percentiles are nearest rank (p_q = x[ceil(q·n/100)]); latency counts every request, a failed one at the time it ended; ok_* count successful requests only",
		"cost per pass = cost of all requests, failed ones included, / passing requests",
		g.String())
	if g.Rework != nil {
		s.Notes = append(s.Notes, reworkNote(g.Rework))
	}
	if opt.Holdout != "" {
		s.Notes = append(s.Notes, opt.Holdout)
	}
	if opt.PassRule != "" {
		s.Notes = append(s.Notes, opt.PassRule)
	}
	s.Notes = append(s.Notes, gradeNotes(s)...)
	if len(s.Arms) > 1 {
		per := "task"
		if multiRepeat {
			per = "task and repeat"
		}
		maxPairs := 0
		for i := 1; i < len(s.Arms); i++ {
			maxPairs = max(maxPairs, s.Arms[i].Paired.Pairs)
		}
		if maxPairs > PairBootstrapMaxN {
			s.Notes = append(s.Notes, fmt.Sprintf("paired deltas are candidate - baseline per %s; intervals are 95%% intervals of the mean delta: normal (mean ± 1.96 standard errors) for comparisons of more than %d pairs, percentile-bootstrap (%d resamples, seed %d) below",
				per, PairBootstrapMaxN, opt.Resamples, opt.Seed))
		} else {
			s.Notes = append(s.Notes, fmt.Sprintf("paired deltas are candidate - baseline per %s; intervals are percentile-bootstrap 95%% intervals of the mean delta (%d resamples, seed %d)",
				per, opt.Resamples, opt.Seed))
		}
	}
	cancelled := 0
	for i := range s.Arms {
		cancelled += s.Arms[i].Cancelled
	}
	if cancelled > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%s cancelled by an interruption count in n and as failed, but not in any latency figure (they measured no system)", words.Count(cancelled, "request")))
	}
	nWarm := 0
	for _, v := range warm {
		nWarm += v
	}
	if nWarm > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("%d warm-up request(s) excluded from every figure", nWarm))
	}
	for i := range s.Arms {
		if n := loadNote(&s.Arms[i]); n != "" {
			s.Notes = append(s.Notes, n)
		}
	}
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		if len(a.Paired.Unmatched) > 0 {
			s.Notes = append(s.Notes, fmt.Sprintf("%s and %s ran different work: %s on one side only; the comparison covers the %d matched pair(s)",
				a.Name, base, words.Count(len(a.Paired.Unmatched), "task"), a.Paired.Pairs))
		}
	}
	return s, nil
}

// summarizeArm computes one arm's figures; recs holds no warm-up records.
func summarizeArm(t *records.Symbols, name string, recs []*records.Rec, warm int, large map[string]bool) ArmSummary {
	a := ArmSummary{Name: name, N: len(recs), Warmup: warm, Outcomes: map[string]int{}, Reasons: []string{}, Groups: map[string]GroupSummary{}}
	groupN := map[records.Sym]int{} // requests of each non-empty group
	groupPass := map[string]int{}
	var sum, okSum, tokOut, cost float64
	for _, r := range recs {
		if t.Str(t.Attrs(r).Outcome) == records.OutcomeCancelled {
			// Never sent or cut short by an interruption: counted, but no
			// latency of the system under test.
			a.Cancelled++
		} else {
			sum += r.E2EMs
		}
		a.Outcomes[t.Str(t.Attrs(r).Outcome)]++
		switch t.Str(t.Attrs(r).Outcome) {
		case records.OutcomeOK:
			a.OK++
			okSum += r.E2EMs
			if !t.Attrs(r).ContractOK {
				a.SilentViolations++
			}
		case records.OutcomeTimeout:
			a.Timeouts++
		}
		if t.Attrs(r).Pass {
			a.Pass++
		}
		if t.Str(t.Attrs(r).Contract) != "" && !slices.Contains(a.Contracts, t.Str(t.Attrs(r).Contract)) {
			a.Contracts = append(a.Contracts, t.Str(t.Attrs(r).Contract))
		}
		tokOut += float64(r.TokensOut)
		cost += r.Cost
		a.ShadowCost += t.Extras(r).ShadowCost
		a.Attempts += int(t.Attrs(r).Attempts)
		if t.Attrs(r).Escalated {
			a.Escalated++
		}
		a.EscalationCost += t.Extras(r).EscalationCost
		if t.Str(t.Attrs(r).Group) != "" {
			groupN[t.Attrs(r).Group]++
			if t.Attrs(r).Pass {
				groupPass[t.Str(t.Attrs(r).Group)]++
			}
		}
		if t.Str(t.Attrs(r).Cache) != "" || t.Str(t.Attrs(r).Leak) != "" || t.Attrs(r).ScopeMismatch {
			if a.CacheStats == nil {
				a.CacheStats = &CacheStats{Leaks: map[string]int{}}
			}
			c := a.CacheStats
			if t.Str(t.Attrs(r).Cache) != "" {
				c.CacheRequests++
			}
			switch t.Str(t.Attrs(r).Cache) {
			case "hit":
				c.Hits++
				if t.Attrs(r).Semantic {
					c.SemanticHits++
					if t.Attrs(r).FalseHit {
						c.FalseHits++
					}
					if t.Attrs(r).Similar {
						c.SimilarityHits++
						if t.Attrs(r).FalseHit {
							c.SimilarityFalseHits++
						}
					}
				}
			case "miss":
			}
			switch l := t.Str(t.Attrs(r).Leak); l {
			case "":
			case records.LeakUnchecked:
				c.LeaksUnchecked++
			default:
				c.Leaks[l]++
			}
			if t.Attrs(r).ScopeMismatch {
				c.ScopeMismatches++
			}
		}
	}
	a.Failed = a.N - a.OK
	slices.Sort(a.Contracts)
	// Each distribution is gathered and sorted in turn in one buffer: on
	// millions of requests, copies of every figure at once would cost
	// more than the records themselves.
	buf := make([]float64, 0, len(recs))
	sorted := func(keep func(r *records.Rec) (float64, bool)) []float64 {
		buf = buf[:0]
		for _, r := range recs {
			if v, ok := keep(r); ok {
				buf = append(buf, v)
			}
		}
		slices.Sort(buf)
		return buf
	}
	outcome := func(r *records.Rec) string { return t.Str(t.Attrs(r).Outcome) }
	all := sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, outcome(r) != records.OutcomeCancelled })
	if len(all) > 0 { // else every request was cancelled: no latency to show (zeros)
		a.P50Ms, a.P90Ms, a.P95Ms, a.P99Ms = quantile.NearestRank(all, 50), quantile.NearestRank(all, 90), quantile.NearestRank(all, 95), quantile.NearestRank(all, 99)
		a.MinMs, a.MaxMs = all[0], all[len(all)-1]
		a.MeanMs = meanWithin(sum, len(all), a.MinMs, a.MaxMs)
	}
	if okLat := sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, outcome(r) == records.OutcomeOK }); len(okLat) > 0 {
		a.OKP50Ms, a.OKP95Ms = f64p(quantile.NearestRank(okLat, 50)), f64p(quantile.NearestRank(okLat, 95))
		a.OKMeanMs = f64p(meanWithin(okSum, len(okLat), okLat[0], okLat[len(okLat)-1]))
	}
	if ttft := sorted(func(r *records.Rec) (float64, bool) { return r.TTFTMs, r.TTFTMs > 0 }); len(ttft) > 0 {
		a.TTFTP50Ms, a.TTFTP95Ms = f64p(quantile.NearestRank(ttft, 50)), f64p(quantile.NearestRank(ttft, 95))
	}
	a.TokensOutMean = tokOut / float64(a.N)
	a.Cost = roundSig(cost, 12)
	a.ShadowCost = roundSig(a.ShadowCost, 12)
	if a.Pass > 0 {
		a.CostPerPass = f64p(a.Cost / float64(a.Pass))
	}
	// Groups: each one's latencies in its own stretch of the buffer.
	at := map[records.Sym]int{}
	off := 0
	for g, n := range groupN {
		at[g] = off
		off += n
	}
	buf = buf[:off]
	for _, r := range recs {
		if g := t.Attrs(r).Group; groupN[g] > 0 {
			buf[at[g]] = r.E2EMs
			at[g]++
		}
	}
	for g, n := range groupN {
		lat := buf[at[g]-n : at[g]]
		slices.Sort(lat)
		a.Groups[t.Str(g)] = GroupSummary{N: n, Pass: groupPass[t.Str(g)], P50Ms: quantile.NearestRank(lat, 50), P95Ms: quantile.NearestRank(lat, 95)}
	}
	if c := a.CacheStats; c != nil {
		if c.CacheRequests > 0 {
			c.HitRate = float64(c.Hits) / float64(c.CacheRequests)
		}
		cache := func(r *records.Rec) string { return t.Str(t.Attrs(r).Cache) }
		if hit := sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, cache(r) == "hit" }); len(hit) > 0 {
			c.HitP50Ms, c.HitP95Ms = f64p(quantile.NearestRank(hit, 50)), f64p(quantile.NearestRank(hit, 95))
		}
		if miss := sorted(func(r *records.Rec) (float64, bool) { return r.E2EMs, cache(r) == "miss" }); len(miss) > 0 {
			c.MissP50Ms, c.MissP95Ms = f64p(quantile.NearestRank(miss, 50)), f64p(quantile.NearestRank(miss, 95))
		}
		if c.SemanticHits > 0 {
			c.FalseHitUpper95 = f64p(binom.Upper95(c.FalseHits, c.SemanticHits))
		}
		if c.SimilarityHits > 0 {
			c.SimilarityFalseHitUpper95 = f64p(binom.Upper95(c.SimilarityFalseHits, c.SimilarityHits))
		}
		if c.HitP50Ms != nil && c.MissP50Ms != nil && *c.MissP50Ms > 0 {
			c.SavedPerHit = f64p(1 - *c.HitP50Ms / *c.MissP50Ms)
		}
	}
	a.RouteStats = routeStats(t, recs, large)
	a.Load = loadStats(t, recs, buf)
	a.TailNote = tailNote(a.N)
	return a
}

// routeStats summarizes routed requests; nil when none was routed.
func routeStats(t *records.Symbols, recs []*records.Rec, large map[string]bool) *RouteStats {
	var rs *RouteStats
	scoreSum := map[string]float64{}
	scoreN := map[string]int{}
	for _, r := range recs {
		if !t.Attrs(r).Routed && t.Str(t.Attrs(r).Misroute) == "" {
			continue
		}
		if rs == nil {
			rs = &RouteStats{RoutedModels: map[string]int{}, Misroutes: map[string]int{records.MisrouteUnder: 0, records.MisrouteOver: 0, records.MisrouteHopeless: 0}}
		}
		if t.Str(t.Attrs(r).Misroute) != "" {
			rs.Misroutes[t.Str(t.Attrs(r).Misroute)]++
		}
		if !t.Attrs(r).Routed {
			continue
		}
		rs.Routed++
		if t.Attrs(r).RouteFallback {
			rs.ScorerFallbacks++
		}
		if t.Str(t.Attrs(r).Model) != "" {
			rs.RoutedModels[t.Str(t.Attrs(r).Model)]++
			if !t.Attrs(r).Escalated {
				scoreSum[t.Str(t.Attrs(r).Model)] += t.Extras(r).RouteScore
				scoreN[t.Str(t.Attrs(r).Model)]++
			}
		}
	}
	if rs == nil || rs.Routed == 0 {
		return rs
	}
	if len(large) == 0 && len(scoreN) >= 2 {
		// The router sends high scores to the large model: the model with
		// the highest mean score is the large one.
		best, bestMean, tie := "", math.Inf(-1), false
		for m, n := range scoreN {
			mean := scoreSum[m] / float64(n)
			switch {
			case mean > bestMean:
				best, bestMean, tie = m, mean, false
			case mean == bestMean:
				tie = true
			}
		}
		if !tie {
			large = map[string]bool{best: true}
		}
	}
	if len(large) > 0 {
		n := 0
		for m, c := range rs.RoutedModels {
			if large[m] {
				n += c
			}
		}
		rs.RoutedLargeShare = f64p(float64(n) / float64(rs.Routed))
	}
	return rs
}

// tailNote says which tail percentiles of n requests are the sample maximum.
func tailNote(n int) string {
	var qs []string
	for _, q := range []float64{90, 95, 99} {
		if quantile.TailIsMax(n, q) {
			qs = append(qs, "p"+strconv.FormatFloat(q, 'f', -1, 64))
		}
	}
	if len(qs) == 0 {
		return ""
	}
	if len(qs) == 1 {
		return fmt.Sprintf("%s of %d requests is the sample maximum; it cannot be extrapolated", qs[0], n)
	}
	return fmt.Sprintf("%s of %d requests are the sample maximum; they cannot be extrapolated", words.And(qs), n)
}

func f64p(v float64) *float64 { return &v }

// meanWithin is sum/n kept inside [lo, hi], the smallest and largest of
// the n values: floating-point summation can put the quotient a hair
// outside, and a mean is never outside its own min and max.
func meanWithin(sum float64, n int, lo, hi float64) float64 {
	return min(max(sum/float64(n), lo), hi)
}

// roundSig rounds to sig significant digits. It is used only to drop
// floating-point summation noise (80.00000000000001 → 80) from a total, at
// a precision (12 digits) far below anything a report compares or prints.
func roundSig(v float64, sig int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', sig, 64), 64)
	return r
}
