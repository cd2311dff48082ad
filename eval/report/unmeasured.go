package report

import (
	"fmt"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

// Cells of the figures an arm's records may not have measured: "-"
// where they did not (the notes say why), never 0.

// passes is the arm's passing requests of n, "-" when nothing was graded.
func passes(a *analysis.ArmSummary) Cell {
	if !a.Measured(records.FigureQuality) {
		return missing()
	}
	return ratio(a.Pass, a.N)
}

// groupPasses is a group's passing requests of n, "-" when the arm's
// records were not graded.
func groupPasses(a *analysis.ArmSummary, gs analysis.GroupSummary) Cell {
	if !a.Measured(records.FigureQuality) {
		return missing()
	}
	return ratio(gs.Pass, gs.N)
}

// latency is one of the arm's latency figures, "-" when none of its
// requests measured a latency (every one failed without a duration).
func latency(a *analysis.ArmSummary, v float64) Cell {
	if !a.Measured(records.FigureLatency) {
		return missing()
	}
	return ms(v)
}

// latencyPartly reports whether some arm left requests out of its latency
// figures, having no duration for them.
func latencyPartly(s *analysis.Summary) bool {
	for i := range s.Arms {
		if s.Arms[i].LatencyUnmeasured > 0 {
			return true
		}
	}
	return false
}

// armCost is the arm's cost, "-" when its records carry none.
func armCost(a *analysis.ArmSummary) Cell {
	if !a.Measured(records.FigureCost) {
		return missing()
	}
	return cost(a.Cost)
}

// escalationCost is what the arm's escalated requests spent after
// escalating, "-" when its cost is unmeasured (the escalation may have
// gone to a model without a price).
func escalationCost(a *analysis.ArmSummary) Cell {
	if !a.Measured(records.FigureCost) {
		return missing()
	}
	return cost(a.EscalationCost)
}

// shadowCost is what judging the arm's routing decisions cost, "-" when
// a shadow call went to a model without a price.
func shadowCost(a *analysis.ArmSummary) Cell {
	if !a.Measured(records.FigureShadowCost) {
		return missing()
	}
	return cost(a.ShadowCost)
}

// qualityPaired reports whether both a candidate and the baseline were
// graded, so that lost and gained tasks are figures.
func qualityPaired(s *analysis.Summary, a *analysis.ArmSummary) bool {
	return a.Measured(records.FigureQuality) && s.Arms[0].Measured(records.FigureQuality)
}

// costPerPassMeasured reports whether the arm's cost per pass rests on
// measured cost and quality.
func costPerPassMeasured(a *analysis.ArmSummary) bool {
	return a.Measured(records.FigureCost) && a.Measured(records.FigureQuality)
}

// lostGained is the paired list's line of a candidate.
func lostGained(s *analysis.Summary, a *analysis.ArmSummary) string {
	if !qualityPaired(s, a) {
		return a.Name + ": lost and gained tasks not measured (no grading)"
	}
	return fmt.Sprintf("%s: lost %s; gained %s", a.Name, orNone(a.Paired.Lost), orNone(a.Paired.Gained))
}

// passesText is the HTML verdict table's pass figure of an arm.
func passesText(a *analysis.ArmSummary) string {
	if !a.Measured(records.FigureQuality) {
		return "-"
	}
	return fmt.Sprintf("%d/%d", a.Pass, a.N)
}
