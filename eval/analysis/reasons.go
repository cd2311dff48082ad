package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// goodputReason states the change in the share of tasks passing within the SLO.
func goodputReason(a *ArmSummary, g GateConfig) string {
	dl := a.Paired.GoodputDelta
	if dl == nil {
		return "goodput not compared task by task (no matched tasks)"
	}
	return fmt.Sprintf("goodput (%s): share of tasks passing within it changes by %s, 95%% CI %s to %s",
		g.SLO.String(), figure.Pct(dl.Mean), figure.Pct(dl.CILow), figure.Pct(dl.CIHigh))
}

// ContractChange says how candidate's contract differs from baseline's,
// judged from the contract hashes their records carry (ArmSummary.Contracts):
// differ is true when both name contracts and the sets differ; unknown is
// true when exactly one side names none, so the comparison cannot tell.
// msg describes the difference ("" when there is none to describe).
func ContractChange(baseline, candidate *ArmSummary) (differ, unknown bool, msg string) {
	bc, cc := baseline.Contracts, candidate.Contracts
	switch {
	case slices.Equal(bc, cc):
		return false, false, ""
	case len(bc) == 0:
		return false, true, fmt.Sprintf("%s's records name no contract, %s's name %s: cannot tell whether both were validated against the same contract",
			baseline.Name, candidate.Name, hashList(cc))
	case len(cc) == 0:
		return false, true, fmt.Sprintf("%s's records name no contract, %s's name %s: cannot tell whether both were validated against the same contract",
			candidate.Name, baseline.Name, hashList(bc))
	}
	return true, false, fmt.Sprintf("validated against contract %s vs %s for %s", hashList(cc), hashList(bc), baseline.Name)
}

// hashList writes contract hashes shortened to 12 characters.
func hashList(hs []string) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		if len(h) > 12 {
			h = h[:12]
		}
		out[i] = h
	}
	return strings.Join(out, "+")
}

// passReason states how the candidate's passes compare with the baseline's.
func passReason(base, a *ArmSummary) string {
	if by := unmeasuredBy(base, a, records.FigureQuality); by != "" {
		return "quality not measured (the records of " + by + " carry no grading): decided without the quality rule, which the gate waives"
	}
	p := a.Paired
	diff := ""
	if len(p.Lost) > 0 || len(p.Gained) > 0 {
		var parts []string
		if len(p.Lost) > 0 {
			parts = append(parts, "loses "+words.Shortlist(p.Lost))
		}
		if len(p.Gained) > 0 {
			parts = append(parts, "gains "+words.Shortlist(p.Gained))
		}
		diff = fmt.Sprintf(": %s (McNemar p = %s)", strings.Join(parts, ", "), figure.P(p.McNemarP))
	}
	switch {
	case a.Pass == base.Pass && diff == "":
		return fmt.Sprintf("passes %d of %d, as many as the baseline, on the same tasks", a.Pass, a.N)
	case a.Pass == base.Pass:
		return fmt.Sprintf("passes %d of %d, as many as the baseline, but on different tasks%s", a.Pass, a.N, diff)
	default:
		return fmt.Sprintf("passes %d of %d vs %d of %d for the baseline%s", a.Pass, a.N, base.Pass, base.N, diff)
	}
}

// latencyReason compares latency, claiming a difference only when the
// paired interval excludes zero, and naming p95 as better or worse only
// when it is (decided on unrounded figures).
func latencyReason(base, a *ArmSummary) string {
	ap95, bp95 := figure.Pair(a.P95Ms, base.P95Ms, figure.Ms)
	p95 := fmt.Sprintf("p95 %s vs %s ms%s", ap95, bp95, figure.RelChange(a.P95Ms, base.P95Ms))
	d := a.Paired.LatencyDeltaMs
	if d == nil {
		return "latency not compared task by task (no matched tasks): " + p95
	}
	delta := fmt.Sprintf("per-task delta mean %s ms, 95%% CI %s to %s", figure.Ms(d.Mean), figure.Ms(d.CILow), figure.Ms(d.CIHigh))
	return directionReason(d, a.P95Ms, base.P95Ms, "faster", "slower", "at p95", p95, delta, "latency")
}

// directionReason words a paired comparison. better and worse are the
// words for a delta interval wholly below or above zero; the named figure
// (a against b, lower is better) is called better or worse in the same
// word only when it is, else the sentence says that it disagrees.
func directionReason(d *Delta, a, b float64, better, worse, at, figure, delta, what string) string {
	switch {
	case d.CIHigh < 0 && a < b:
		return better + ": " + figure + "; " + delta
	case d.CIHigh < 0:
		return better + " per task (" + delta + "), but not " + at + ": " + figure
	case d.CILow > 0 && a > b:
		return worse + ": " + figure + "; " + delta
	case d.CILow > 0:
		return worse + " per task (" + delta + "), but not " + at + ": " + figure
	}
	return "no clear " + what + " difference: " + delta + " includes 0 (" + figure + ")"
}

// costReason compares cost per pass and the paired cost delta.
func costReason(base, a *ArmSummary) string {
	if by := unmeasuredBy(base, a, records.FigureCost); by != "" {
		return "cost not measured (the records of " + by + " carry none): decided without cost, which the gate waives"
	}
	acpp, bcpp := figure.CostPerPassPair(a.CostPerPass, base.CostPerPass)
	cpp := fmt.Sprintf("cost per pass %s vs %s", acpp, bcpp)
	if a.CostPerPass != nil && base.CostPerPass != nil {
		cpp += figure.RelChange(*a.CostPerPass, *base.CostPerPass)
	}
	d := a.Paired.CostDelta
	if d == nil {
		return "cost not compared task by task (no matched tasks): " + cpp
	}
	delta := fmt.Sprintf("per-task delta mean %s, 95%% CI %s to %s", figure.Cost(d.Mean), figure.Cost(d.CILow), figure.Cost(d.CIHigh))
	ac, bc := math.Inf(1), math.Inf(1) // nothing passed: no cost per pass to call better
	if a.CostPerPass != nil && base.CostPerPass != nil {
		ac, bc = *a.CostPerPass, *base.CostPerPass
	}
	return directionReason(d, ac, bc, "cheaper", "more expensive", "per pass", cpp, delta, "cost")
}

// notRescued tells, for a rejected candidate that is faster or cheaper,
// that speed and cost do not outweigh the gate.
func notRescued(base, a *ArmSummary) string {
	var wins []string
	if a.P95Ms < base.P95Ms {
		ap95, bp95 := figure.Pair(a.P95Ms, base.P95Ms, figure.Ms)
		wins = append(wins, fmt.Sprintf("p95 %s vs %s ms", ap95, bp95))
	}
	if a.CostPerPass != nil && base.CostPerPass != nil && *a.CostPerPass < *base.CostPerPass {
		acpp, bcpp := figure.CostPerPassPair(a.CostPerPass, base.CostPerPass)
		wins = append(wins, fmt.Sprintf("cost per pass %s vs %s", acpp, bcpp))
	}
	if len(wins) == 0 {
		return ""
	}
	return "not rescued by speed or cost (" + strings.Join(wins, ", ") + "): the quality gate comes first"
}

// weakLoss warns when a rejection for lost tasks is not statistically clear.
func weakLoss(a *ArmSummary) string {
	p := a.Paired
	if p == nil || len(p.Lost) == 0 || p.McNemarP < figure.PThreshold {
		return ""
	}
	return fmt.Sprintf("%s: losing %s and gaining %d is not statistically clear (McNemar p = %s); the gate rejects the loss all the same, and repeats would show whether it is noise",
		a.Name, words.Count(len(p.Lost), "task"), len(p.Gained), figure.P(p.McNemarP))
}

// tailWarnings groups arms whose tail percentiles are the sample maximum.
func tailWarnings(arms []ArmSummary) []string {
	var notes []string
	names := map[string][]string{}
	for i := range arms {
		n := arms[i].TailNote
		if n == "" {
			continue
		}
		if _, ok := names[n]; !ok {
			notes = append(notes, n)
		}
		names[n] = append(names[n], arms[i].Name)
	}
	out := make([]string, 0, len(notes))
	for _, n := range notes {
		out = append(out, strings.Join(names[n], ", ")+": "+n)
	}
	return out
}

// fewPairsWarnings flags paired intervals that rest on few pairs, grouping
// candidates with the same pair count.
func fewPairsWarnings(arms []ArmSummary) []string {
	const few = 20
	var counts []int
	names := map[int][]string{}
	for i := 1; i < len(arms); i++ {
		p := arms[i].Paired
		if p == nil || p.Pairs == 0 || p.Pairs >= few {
			continue
		}
		if _, ok := names[p.Pairs]; !ok {
			counts = append(counts, p.Pairs)
		}
		names[p.Pairs] = append(names[p.Pairs], arms[i].Name)
	}
	out := make([]string, 0, len(counts))
	for _, n := range counts {
		out = append(out, fmt.Sprintf("%s: the paired intervals rest on %s; more tasks or repeats would narrow them",
			strings.Join(names[n], ", "), words.Count(n, "pair")))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// falseHitFail is the failure of a semantic cache shown to serve wrong
// answers too often: among its similarity hits (hits an exact cache would
// not have served; identical texts say nothing about similarity), the
// false hits' rate is above the gate's limit and so is its one-sided 95%
// upper bound. "" otherwise; a bound above the limit on a rate that is not
// is falseHitUnclear's.
func falseHitFail(a *ArmSummary, g GateConfig) string {
	c := a.CacheStats
	if c == nil || c.SimilarityFalseHitUpper95 == nil || c.SimilarityHits == 0 {
		return ""
	}
	rate := float64(c.SimilarityFalseHits) / float64(c.SimilarityHits)
	if !beyond(*c.SimilarityFalseHitUpper95, g.FalseHitLimit()) || !beyond(rate, g.FalseHitLimit()) {
		return ""
	}
	return fmt.Sprintf("false hits: %d of %s served another task's answer wrongly (%s); the 95%% upper bound on the rate, %s, is above the gate's %s",
		c.SimilarityFalseHits, words.Count(c.SimilarityHits, "similarity hit"), figure.PctOfLimit(rate, g.FalseHitLimit()),
		figure.PctOfLimit(*c.SimilarityFalseHitUpper95, g.FalseHitLimit()), figure.Pct(g.FalseHitLimit()))
}

// falseHitUnclear says when a semantic cache's similarity hits are too few
// to bound its false-hit rate below the gate's limit, though the rate seen
// is within it: nothing shows harm, nothing shows safety.
func falseHitUnclear(a *ArmSummary, g GateConfig) string {
	c := a.CacheStats
	if c == nil || c.SimilarityFalseHitUpper95 == nil || c.SimilarityHits == 0 || falseHitFail(a, g) != "" {
		return ""
	}
	if !beyond(*c.SimilarityFalseHitUpper95, g.FalseHitLimit()) {
		return ""
	}
	return fmt.Sprintf("%d false hits in %s: the 95%% upper bound on the rate, %s, is above the gate's %s; more similarity hits would bound it",
		c.SimilarityFalseHits, words.Count(c.SimilarityHits, "similarity hit"),
		figure.PctOfLimit(*c.SimilarityFalseHitUpper95, g.FalseHitLimit()), figure.Pct(g.FalseHitLimit()))
}

// perPass is cost over passes, nil when nothing passed.
func perPass(cost float64, pass int) *float64 {
	if pass == 0 {
		return nil
	}
	v := cost / float64(pass)
	return &v
}
