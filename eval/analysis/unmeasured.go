package analysis

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// Measured reports whether every record of the arm measured figure (one
// of records.Figures). An unmeasured figure is shown as "-" and null, and
// the gate decides nothing on it.
func (a *ArmSummary) Measured(figure string) bool { return !slices.Contains(a.Unmeasured, figure) }

// MarshalJSON writes the documented summary.json names; the figures of an
// unmeasured cost, quality or token count are null, never 0.
func (a ArmSummary) MarshalJSON() ([]byte, error) {
	type plain ArmSummary // the same fields, without this method
	if len(a.Unmeasured) == 0 && a.LeaksMeasured() {
		return json.Marshal(plain(a))
	}
	// The outer fields hide plain's of the same names.
	out := struct {
		plain
		Pass          *int     `json:"pass"`
		Cost          *float64 `json:"cost"`
		TokensOutMean *float64 `json:"tokens_out_mean"`
		P50Ms         *float64 `json:"p50_ms"`
		P90Ms         *float64 `json:"p90_ms"`
		P95Ms         *float64 `json:"p95_ms"`
		P99Ms         *float64 `json:"p99_ms"`
		MaxMs         *float64 `json:"max_ms"`
		MeanMs        *float64 `json:"mean_ms"`
		MinMs         *float64 `json:"min_ms"`
		// Leaks is left out with the cache figures, null when some hit
		// could not be checked (its records do not say which scope the
		// answer was built for): unmeasured, which an empty map would
		// read as none.
		Leaks any `json:"leaks,omitempty"`
		// EscalationCost is null when requests escalated and the cost is
		// unmeasured, left out when none escalated; ShadowCost and
		// GradeCost null when unmeasured, left out when 0.
		EscalationCost any `json:"escalation_cost,omitempty"`
		ShadowCost     any `json:"shadow_cost,omitempty"`
		GradeCost      any `json:"grade_cost,omitempty"`
	}{plain: plain(a)}
	for _, x := range []struct {
		figure string
		v      float64
		out    *any
	}{{records.FigureShadowCost, a.ShadowCost, &out.ShadowCost}, {records.FigureGradeCost, a.GradeCost, &out.GradeCost}} {
		switch {
		case !a.Measured(x.figure):
			*x.out = json.RawMessage("null")
		case x.v != 0:
			*x.out = x.v
		}
	}
	if a.Measured(records.FigureQuality) {
		out.Pass = &a.Pass
	}
	if a.Measured(records.FigureCost) {
		out.Cost = &a.Cost
		if a.EscalationCost != 0 {
			out.EscalationCost = a.EscalationCost
		}
	} else if a.Escalated > 0 {
		out.EscalationCost = json.RawMessage("null")
	}
	if a.Measured(records.FigureTokens) {
		out.TokensOutMean = &a.TokensOutMean
	}
	if a.Measured(records.FigureLatency) {
		out.P50Ms, out.P90Ms, out.P95Ms, out.P99Ms = &a.P50Ms, &a.P90Ms, &a.P95Ms, &a.P99Ms
		out.MaxMs, out.MeanMs, out.MinMs = &a.MaxMs, &a.MeanMs, &a.MinMs
	}
	if a.CacheStats != nil {
		out.Leaks = a.CacheStats.Leaks
		if !a.LeaksMeasured() {
			out.Leaks = json.RawMessage("null")
		}
	}
	return json.Marshal(out)
}

// MarshalJSON writes the documented names; when either side carries no
// grading, the lost and gained tasks, their causes and McNemar's p-value
// are null, never an empty list and 1, and so are the groups' counts.
func (p Paired) MarshalJSON() ([]byte, error) {
	type plain Paired // the same fields, without this method
	if !p.ungraded {
		return json.Marshal(plain(p))
	}
	type group struct {
		Pairs          int     `json:"pairs"`
		Lost           *int    `json:"lost"`
		Gained         *int    `json:"gained"`
		LatencyDeltaMs float64 `json:"latency_delta_median_ms"`
	}
	groups := make(map[string]group, len(p.Groups))
	for k, g := range p.Groups {
		groups[k] = group{Pairs: g.Pairs, LatencyDeltaMs: g.LatencyDeltaMs}
	}
	// The outer fields hide plain's of the same names.
	return json.Marshal(struct {
		plain
		Lost       *[]string        `json:"lost"`
		Gained     *[]string        `json:"gained"`
		LostCauses map[string]int   `json:"lost_causes,omitempty"`
		McNemarP   *float64         `json:"mcnemar_p"`
		Groups     map[string]group `json:"groups"`
	}{plain: plain(p), Groups: groups})
}

// clearUnmeasured drops the figures of arm i that rest on what its
// records, or the baseline's, did not measure: an interval or a paired
// delta over placeholder zeros is no figure.
func clearUnmeasured(base, a *ArmSummary) {
	if !a.Measured(records.FigureCost) && a.Uncertainty != nil {
		a.Uncertainty.CostPerPassCI = Interval{}
	}
	for _, p := range []*Paired{a.Paired, a.Outside} {
		if p == nil {
			continue
		}
		if !a.Measured(records.FigureCost) || !base.Measured(records.FigureCost) {
			p.CostDelta = nil
		}
		if !a.Measured(records.FigureQuality) || !base.Measured(records.FigureQuality) {
			p.GoodputDelta = nil
			p.ungraded = true
		}
	}
}

// unmeasuredBy names the arms among base and a that did not measure
// figure, "" when both did.
func unmeasuredBy(base, a *ArmSummary, figure string) string {
	var by []string
	for _, x := range []*ArmSummary{base, a} {
		if !x.Measured(figure) {
			by = append(by, x.Name)
		}
	}
	return words.And(by)
}

// qualityUnmeasured says why the quality rule cannot hold when base's or
// a's records carry no grading and the gate does not waive quality; ""
// otherwise. An objective of goodput counts passes, so no waiver lets it
// decide.
func qualityUnmeasured(base, a *ArmSummary, g GateConfig) string {
	by := unmeasuredBy(base, a, records.FigureQuality)
	switch {
	case by == "":
		return ""
	case g.Objective == ObjectiveGoodput:
		return "inconclusive: quality is not measured (the records of " + by + " carry no grading), and goodput counts passing requests; grade the records (see docs/formats.md, \"Grading imported records\")"
	case g.Waived(WaiveQuality):
		return ""
	}
	return "inconclusive: quality is not measured: the records of " + by + " carry no grading, so the quality gate cannot hold; grade them (see docs/formats.md, \"Grading imported records\") or waive quality in the gate to decide on speed and cost alone"
}

// unmeasuredWhy lists what makes a verdict inconclusive because the gate
// would rest on a figure base's or a's records did not measure: the cost
// objective and the cost-per-pass guardrail on cost, the TTFT guardrail on
// TTFT, each unless the gate waives the figure (the objective itself
// cannot be waived).
func unmeasuredWhy(base, a *ArmSummary, g GateConfig) []string {
	var why []string
	if by := unmeasuredBy(base, a, records.FigureCost); by != "" {
		var needs []string
		if g.Objective == ObjectiveCost {
			why = append(why, "inconclusive: cost is not measured in the records of "+by+", and the gate's objective is cost; only records with cost can decide it")
		} else if !g.Waived(WaiveCost) {
			if g.CostPerPassRegressPct != nil {
				needs = append(needs, "the cost-per-pass guardrail")
			}
			if g.Objective == ObjectiveEither {
				needs = append(needs, "the objective's per-task cost")
			}
		}
		if len(needs) > 0 {
			why = append(why, fmt.Sprintf("inconclusive: cost is not measured in the records of %s, so %s cannot be checked; waive cost in the gate to decide without it",
				by, strings.Join(needs, " and ")))
		}
	}
	if by := unmeasuredBy(base, a, records.FigureLatency); by != "" {
		why = append(why, "inconclusive: latency is not measured in the records of "+by+" (every request failed, and the source gives no duration for a failure), so no latency can be compared")
	}
	if by := unmeasuredBy(base, a, records.FigureTTFT); by != "" && g.TTFTP95RegressPct != nil && !g.Waived(WaiveTTFT) {
		why = append(why, "inconclusive: TTFT is not measured in the records of "+by+", so the TTFT p95 guardrail cannot be checked; waive ttft in the gate to decide without it")
	}
	return why
}

// unmeasuredNotes says, once per figure, which arms did not measure it
// and what the report shows instead; for cost, which models of the run's
// design (d, may be nil) declare no price.
func unmeasuredNotes(s *Summary, d *Design) []string {
	shown := map[string]string{
		records.FigureCost:    "cost, cost per pass and the paired cost delta are \"-\" (null in JSON), not 0",
		records.FigureQuality: "pass, cost per pass and the lost and gained tasks are \"-\" (null in JSON): nothing was graded, which is not the same as nothing passing",
		records.FigureTokens:  "token figures are \"-\" (null in JSON), not 0",
		records.FigureTTFT:    "TTFT figures are \"-\" (left out of JSON), not 0",
		records.FigureLoad:    "the load table (generator lag and slot queue) leaves the arm out (no load in JSON), not 0",
		records.FigureLatency: "latency figures are \"-\" (null in JSON), not 0",
		// Evaluation overhead: only a call to a model without a price
		// leaves it unmeasured.
		records.FigureShadowCost: "the routing table's shadow cost is \"-\" (null in JSON), not 0",
		records.FigureGradeCost:  "the grading cost is \"-\" (null in JSON), not 0",
	}
	var notes []string
	for _, f := range records.Figures {
		var arms []string
		for i := range s.Arms {
			if !s.Arms[i].Measured(f) {
				arms = append(arms, s.Arms[i].Name)
			}
		}
		switch {
		case len(arms) == 0:
		case costFigures[f] != "" && d != nil && len(d.Unpriced) > 0:
			notes = append(notes, unpricedNote(f, arms, d.Unpriced, shown[f]))
		default:
			notes = append(notes, fmt.Sprintf("%s not measured: the records of %s do not carry it, so %s", f, words.And(arms), shown[f]))
		}
	}
	var partly []string
	for i := range s.Arms {
		if a := &s.Arms[i]; a.LatencyUnmeasured > 0 && a.Measured(records.FigureLatency) {
			partly = append(partly, fmt.Sprintf("%d of %d requests of %s", a.LatencyUnmeasured, a.N, a.Name))
		}
	}
	if len(partly) > 0 {
		notes = append(notes, "latency not measured for "+words.And(partly)+": failures whose source gives no duration; they count as failed, every latency figure is over the requests that measured one and the paired latency deltas over the pairs both of whose requests did (never a failure at 0 ms)")
	}
	return notes
}

// comparePaired compares candidate records with baseline records by
// (task_id, repeat), as comparePairedAll does, except that the latency
// figures — the latency delta, the groups' latency deltas and the
// guardrail ratios — are over the pairs both of whose requests measured a
// latency: a failure whose source gave no duration holds a placeholder 0,
// which would read as the fastest answer of all. Quality, cost, goodput
// (a failure is never good) and every count stay over every pair.
func comparePaired(t *records.Symbols, baseline, candidate []*records.Rec, opt PairOptions) Paired {
	p := comparePairedAll(t, baseline, candidate, opt)
	b, c := timedOnly(t, baseline), timedOnly(t, candidate)
	if len(b) == len(baseline) && len(c) == len(candidate) {
		return p
	}
	l := comparePairedAll(t, b, c, opt)
	p.LatencyDeltaMs, p.P95Ratio, p.TTFTP95Ratio = l.LatencyDeltaMs, l.P95Ratio, l.TTFTP95Ratio
	for g, gd := range p.Groups {
		gd.LatencyDeltaMs = l.Groups[g].LatencyDeltaMs
		p.Groups[g] = gd
	}
	return p
}

// timedOnly is recs without those whose latency is unmeasured; recs
// itself when every one measured it.
func timedOnly(t *records.Symbols, recs []*records.Rec) []*records.Rec {
	n := 0
	for _, r := range recs {
		if t.Attrs(r).Unmeasured&latencyBit != 0 {
			n++
		}
	}
	if n == 0 {
		return recs
	}
	out := make([]*records.Rec, 0, len(recs)-n)
	for _, r := range recs {
		if t.Attrs(r).Unmeasured&latencyBit == 0 {
			out = append(out, r)
		}
	}
	return out
}

// costFigures names, for the notes, the figures a model without a price
// leaves unmeasured.
var costFigures = map[string]string{
	records.FigureCost:       "its cost",
	records.FigureShadowCost: "the cost of judging its routing decision (shadow_cost)",
	records.FigureGradeCost:  "the cost of grading its answer (grade_cost)",
}

// unpricedNote says why figure (one of costFigures) is unmeasured in the
// records of arms when models of the run declare no price, and what is
// shown instead: a call to one of them has no known cost, and an arm
// whose requests called one and a priced model (a router, a cascade) has
// no total either, since the priced calls' cost alone would understate
// it.
func unpricedNote(figure string, arms, models []string, shown string) string {
	which, it := "model "+words.And(models)+" declares", "it"
	if len(models) > 1 {
		which, it = "models "+words.And(models)+" declare", "one of them"
	}
	total := ""
	if figure == records.FigureCost {
		total = "; an arm with any such request has no total, even if its other requests went to a priced model (their cost alone would understate the arm's)"
	}
	return fmt.Sprintf("%s not measured: %s no price (price_in_per_mtok, price_out_per_mtok), so a call to %s has no known cost, "+
		"and the records of %s that called %s leave %s unmeasured; %s%s; declare the prices, 0 for a model that costs nothing, to measure it",
		figure, which, it, words.And(arms), it, costFigures[figure], shown, total)
}
