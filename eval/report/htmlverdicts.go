package report

import (
	"fmt"
	"strings"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
)

// htmlVerdict is one arm's row of the verdict table at the top of the page:
// the verdict, its reason in one line, and the figures it rests on.
type htmlVerdict struct {
	Arm, Colour, Verdict, Class string
	// Reason is the arm's first reason, the one that decided the verdict;
	// the Decision section lists them all.
	Reason string
	// Passes is "412/480", PassesBase "vs 415/480" (empty for the
	// baseline itself).
	Passes, PassesBase string
	// Latency and Cost are the paired per-task deltas with their 95%
	// intervals; the classes colour a delta whose interval excludes 0.
	Latency, LatencyCI, LatencyClass string
	Cost, CostCI, CostClass          string
	// Goodput is the paired change in the share of tasks passing within
	// the SLO, when the gate's objective is goodput (higher is better).
	Goodput, GoodputCI, GoodputClass string
	// Checks are the gate's hard checks that apply to the arm: leaks,
	// false hits, invalid answers, contract failures.
	Checks []htmlCheck
}

// htmlCheck is one gate check of an arm; Bad marks a failing one.
type htmlCheck struct {
	Text string
	Bad  bool
}

// hasGoodput reports whether some arm of rows has a goodput delta, which
// adds its column to the verdict table.
func hasGoodput(rows []htmlVerdict) bool {
	for _, r := range rows {
		if r.Goodput != "" {
			return true
		}
	}
	return false
}

// verdictRows is the verdict table of s, one row per arm in summary order.
func verdictRows(s *analysis.Summary) []htmlVerdict {
	base := &s.Arms[0]
	rows := make([]htmlVerdict, len(s.Arms))
	for i := range s.Arms {
		a := &s.Arms[i]
		r := htmlVerdict{Arm: shown(a.Name), Colour: cssColour(i), Verdict: a.Verdict, Class: verdictClass(a.Verdict),
			Reason: shown(firstReason(a)), Passes: passesText(a), Latency: "-", Cost: "-"}
		if i > 0 {
			r.PassesBase = "vs " + passesText(base)
		}
		if p := a.Paired; p != nil && i > 0 {
			if d := p.LatencyDeltaMs; d != nil {
				r.Latency, r.LatencyCI = signed(figure.Ms(d.Mean))+" ms", "["+figure.Ms(d.CILow)+", "+figure.Ms(d.CIHigh)+"]"
				r.LatencyClass = deltaClass(d)
			}
			if d := p.CostDelta; d != nil {
				r.Cost, r.CostCI = signed(figure.Cost(d.Mean)), "["+figure.Cost(d.CILow)+", "+figure.Cost(d.CIHigh)+"]"
				r.CostClass = deltaClass(d)
			}
			if d := p.GoodputDelta; d != nil {
				r.Goodput, r.GoodputCI = signed(figure.Pct(d.Mean)), "["+figure.Pct(d.CILow)+", "+figure.Pct(d.CIHigh)+"]"
				// Higher is better: the classes swap.
				r.GoodputClass = map[string]string{"better": "worse", "worse": "better"}[deltaClass(d)]
			}
		}
		r.Checks = armChecks(a)
		rows[i] = r
	}
	return rows
}

// firstReason is the reason that decided a's verdict: the first one, or,
// for an accepted arm, the first that names what it improves.
func firstReason(a *analysis.ArmSummary) string {
	if a.Verdict == analysis.VerdictBaseline {
		return "the baseline every candidate is compared with"
	}
	if a.Verdict == analysis.VerdictAccept {
		for _, r := range a.Reasons {
			if strings.HasPrefix(r, "faster") || strings.HasPrefix(r, "cheaper") || strings.HasPrefix(r, "goodput") {
				return r
			}
		}
	}
	if len(a.Reasons) == 0 {
		return ""
	}
	return a.Reasons[0]
}

// armChecks lists the gate's hard checks that apply to a: leaks for an arm
// with a cache, false hits for a semantic one, invalid answers recorded ok
// and contract failures where there are any.
func armChecks(a *analysis.ArmSummary) []htmlCheck {
	var out []htmlCheck
	if c := a.CacheStats; c != nil {
		n := a.LeakCount()
		out = append(out, htmlCheck{Text: fmt.Sprintf("leaks %d", n), Bad: n > 0})
		if c.FalseHitUpper95 != nil {
			out = append(out, htmlCheck{Text: fmt.Sprintf("false hits %d/%d (≤ %s)", c.FalseHits, c.SemanticHits, figure.Pct(*c.FalseHitUpper95)),
				Bad: failedOn(a, "false hits")})
		}
	}
	if a.SilentViolations > 0 {
		out = append(out, htmlCheck{Text: fmt.Sprintf("invalid ok %d", a.SilentViolations), Bad: true})
	}
	if n := a.Outcomes[records.OutcomeContractFail]; n > 0 {
		// Bad when contract failures are what lost most of the arm's lost tasks.
		bad := false
		if p := a.Paired; p != nil && a.Verdict == analysis.VerdictReject && len(p.Lost) > 0 {
			bad = 2*(p.LostCauses[records.OutcomeContractFail]+p.LostCauses["contract"]) >= len(p.Lost)
		}
		out = append(out, htmlCheck{Text: fmt.Sprintf("contract fails %d", n), Bad: bad})
	}
	return out
}

// failedOn reports whether a rejected arm's reasons name what.
func failedOn(a *analysis.ArmSummary, what string) bool {
	if a.Verdict != analysis.VerdictReject {
		return false
	}
	for _, r := range a.Reasons {
		if strings.Contains(r, what) {
			return true
		}
	}
	return false
}

// signed puts a plus sign before a positive figure, so that a delta reads
// as a change.
func signed(s string) string {
	if s != "" && s[0] != '-' && strings.Trim(s, "0.") != "" {
		return "+" + s
	}
	return s
}

// deltaClass colours a paired delta whose 95% interval excludes 0: lower
// (faster, cheaper) is better.
func deltaClass(d *analysis.Delta) string {
	switch {
	case d.CIHigh < 0:
		return "better"
	case d.CILow > 0:
		return "worse"
	}
	return ""
}
