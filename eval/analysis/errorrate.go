package analysis

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// The run's error rate. A candidate is accepted when it improves an
// objective figure (per-task latency, per-task cost, goodput); each such
// claim is a one-sided test whose uncorrected level, α/2, is the end of
// the (1 - α) interval the report prints (2.5% for the 95% interval).
// Every candidate's claims on every figure it may win on are one family,
// corrected together with Holm's step-down, so that the chance of
// accepting any candidate that does not improve is at most α/2 over the
// whole run (within the stated α, whatever the number of candidates and
// figures). Guardrails, the quality rule and the failure share are not in
// the family: they can only reject, and each is taken at α on its own.

// pAtLeast is the one-sided p-value of "the mean delta is below thr": the
// share of the bootstrap's resampled means at or above thr (so that p ≤
// 2.5% exactly when the 95% interval's upper end is below thr), or, for
// the normal interval, the normal tail beyond thr. 1 for no delta.
func (d *Delta) pAtLeast(thr float64) float64 {
	if d == nil || math.IsNaN(d.Mean) {
		return 1
	}
	if d.means != nil {
		k := len(d.means) - sort.SearchFloat64s(d.means, thr)
		return float64(k) / float64(len(d.means))
	}
	se := (d.CIHigh - d.CILow) / (2 * 1.959964)
	if se <= 0 || math.IsNaN(se) {
		return b2f(d.Mean >= thr)
	}
	return distuv.UnitNormal.Survival((thr - d.Mean) / se)
}

// pAtMost is pAtLeast's mirror: the p-value of "the mean delta is above
// thr".
func (d *Delta) pAtMost(thr float64) float64 {
	if d == nil || math.IsNaN(d.Mean) {
		return 1
	}
	if d.means != nil {
		k := sort.Search(len(d.means), func(i int) bool { return d.means[i] > thr })
		return float64(k) / float64(len(d.means))
	}
	se := (d.CIHigh - d.CILow) / (2 * 1.959964)
	if se <= 0 || math.IsNaN(se) {
		return b2f(d.Mean <= thr)
	}
	return distuv.UnitNormal.CDF((thr - d.Mean) / se)
}

// pTwoSided is the two-sided p-value of a mean delta of 0.
func (d *Delta) pTwoSided() float64 {
	return math.Min(1, 2*math.Min(d.pAtLeast(0), d.pAtMost(0)))
}

// Objective figures a candidate may win on (claim.figure).
const (
	figLatency = "latency"
	figCost    = "cost"
	figGoodput = "goodput"
)

// claim is one accept decision of the run's family: a candidate
// improving one figure, and its one-sided p-value.
type claim struct {
	arm, figure string
	p           float64
}

// claims are the accept decisions a candidate may win on under the gate's
// objective, with their p-values: an improvement beyond the gate's
// minimum effect (a share of the baseline's mean per task).
func claims(base, a *ArmSummary, g GateConfig) []claim {
	p := a.Paired
	if p == nil {
		return nil
	}
	m := g.MinEffect() / 100
	latScale, costScale := base.MeanMs, 0.0
	if base.N > 0 {
		costScale = base.Cost / float64(base.N)
	}
	lat := claim{a.Name, figLatency, p.LatencyDeltaMs.pAtLeast(math.Min(-m*latScale, 0))}
	cost := claim{a.Name, figCost, p.CostDelta.pAtLeast(math.Min(-m*costScale, 0))}
	switch g.Objective {
	case ObjectiveLatency:
		return []claim{lat}
	case ObjectiveCost:
		return []claim{cost}
	case ObjectiveGoodput:
		return []claim{{a.Name, figGoodput, p.GoodputDelta.pAtMost(m)}}
	}
	if unmeasuredBy(base, a, records.FigureCost) != "" {
		return []claim{lat} // cost waived or unmeasured: latency alone
	}
	return []claim{lat, cost}
}

// family is the run's accept decisions with the level each was tested at.
type family struct {
	size  int
	alpha float64 // the run's error rate
	// levels maps arm and figure to the level its p-value was held to in
	// Holm's step-down; a claim the step-down stopped before has level
	// -1 (never accepted).
	levels map[string]map[string]float64
}

// holm runs Holm's step-down (stepDown) over every candidate's claims.
func holm(s *Summary, g GateConfig) family {
	var all []claim
	base := &s.Arms[0]
	for i := 1; i < len(s.Arms); i++ {
		all = append(all, claims(base, &s.Arms[i], g)...)
	}
	return stepDown(all, g.ErrorRate())
}

// stepDown is Holm's step-down at the run's error rate alpha: sorted by
// p-value, the i-th smallest (from 0) of m claims is accepted when it and
// every smaller one are at most (alpha/2)/(m - i).
func stepDown(all []claim, alpha float64) family {
	f := family{size: len(all), alpha: alpha, levels: map[string]map[string]float64{}}
	all = slices.Clone(all)
	slices.SortStableFunc(all, func(x, y claim) int {
		switch {
		case x.p < y.p:
			return -1
		case x.p > y.p:
			return 1
		}
		return 0
	})
	stopped := false
	for i, c := range all {
		level := f.alpha / 2 / float64(len(all)-i)
		if stopped || c.p > level {
			stopped, level = true, -1
		}
		if f.levels[c.arm] == nil {
			f.levels[c.arm] = map[string]float64{}
		}
		f.levels[c.arm][c.figure] = level
	}
	return f
}

// note states the family and the error rate, for the report's notes.
func (f family) note(g GateConfig) string {
	per := "per-task latency and per-task cost"
	switch g.Objective {
	case ObjectiveLatency:
		per = "per-task latency"
	case ObjectiveCost:
		per = "per-task cost"
	case ObjectiveGoodput:
		per = "goodput"
	}
	return fmt.Sprintf("error rate: α = %s for the whole run: its %s (every candidate on %s, where measured) are corrected together by Holm's step-down, each a one-sided test at (α/2)/k for the k still in play, so that the chance of accepting any candidate that does not improve is at most α/2 = %s; the quality rule, the failure share, the guardrails and the A/A control's test are each taken at α and stay out of the family",
		figure.Trim(fmt.Sprint(f.alpha)), words.Count(f.size, "accept decision"), per, figure.Pct(f.alpha/2))
}

// twinDiffers says how the A/A control (the twin) differs from the
// baseline beyond chance: any gated figure (quality, failure share,
// per-task latency, per-task cost) whose two-sided test of no difference
// has p below α/k, k the figures tested (Bonferroni, so that an identical
// twin is flagged in at most α of runs). Outcome noise is inside the
// quality test's variance, so it never flags the twin by itself. "" when
// nothing differs.
func twinDiffers(base, a *ArmSummary, g GateConfig) string {
	p := a.Paired
	if p == nil {
		return ""
	}
	type test struct {
		what string
		p    float64
	}
	tests := []test{{"errors and timeouts", McNemarExact(p.failCandOnly, p.failBaseOnly)}}
	if unmeasuredBy(base, a, records.FigureQuality) == "" && len(p.tasks) > 0 {
		tests = append(tests, test{"pass rate", QualityInterval(taskDiffs(p.tasks), g.ErrorRate()).P})
	}
	if p.LatencyDeltaMs != nil {
		tests = append(tests, test{"per-task latency", p.LatencyDeltaMs.pTwoSided()})
	}
	if p.CostDelta != nil && unmeasuredBy(base, a, records.FigureCost) == "" {
		tests = append(tests, test{"per-task cost", p.CostDelta.pTwoSided()})
	}
	level := g.ErrorRate() / float64(len(tests))
	var differ []string
	for _, t := range tests {
		if t.p < level {
			differ = append(differ, fmt.Sprintf("%s (p = %s)", t.what, figure.P(t.p)))
		}
	}
	if len(differ) == 0 {
		return ""
	}
	return fmt.Sprintf("%s differs from %s beyond chance in %s, two-sided at α = %s over %s",
		a.Name, base.Name, strings.Join(differ, ", "), figure.Trim(fmt.Sprint(g.ErrorRate())), words.Count(len(tests), "figure"))
}

// failureFail is the failure share's rule, on every source of records: a
// candidate whose errors and timeouts exceed the baseline's beyond chance,
// paired by task (exact McNemar test on the pairs where only one side
// failed, two-sided p below α), is rejected. No waiver turns failures
// into speed. "" when it does not.
func failureFail(base, a *ArmSummary, g GateConfig) string {
	p := a.Paired
	if p == nil || p.failCandOnly <= p.failBaseOnly {
		return ""
	}
	mp := McNemarExact(p.failCandOnly, p.failBaseOnly)
	if mp >= g.ErrorRate() {
		return ""
	}
	return fmt.Sprintf("fails more: errors and timeouts on %s where %s succeeded, against %d the other way (McNemar p = %s, beyond chance at α = %s)",
		words.Count(p.failCandOnly, "task"), base.Name, p.failBaseOnly, figure.P(mp), figure.Trim(fmt.Sprint(g.ErrorRate())))
}
