package tune

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/crab-testbed/crab/router"
)

// WriteText writes the tuning report for a terminal: the split, each
// policy's choice on calibration, its one holdout report, the misrouted
// tasks and the Pareto frontier.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "crab tune: %d tasks: %d calibration, %d holdout (holdout %s, seed %d; %s)\n",
		r.Tasks, r.Calibrated, r.Held, fmtFloat(c.Holdout), c.Seed, r.SplitNote)
	if c.Rule.Budget > 0 {
		fmt.Fprintf(&b, "rule: most passes at a cost per request of at most %s (--budget)\n", fmtCost(Figure(c.Rule.Budget)))
	} else {
		fmt.Fprintf(&b, "rule: cheapest threshold whose calibration pass count is at least all-large minus %d (--max-pass-loss)\n", c.Rule.MaxPassLoss)
	}
	if c.Scorer != "" {
		fmt.Fprintf(&b, "scorer: %s\n", c.Scorer)
	}
	if r.CostNote != "" {
		fmt.Fprintf(&b, "note: %s\n", r.CostNote)
	}
	writePolicy(&b, &r.PolicyReport)
	if r.Cascade != nil {
		writePolicy(&b, r.Cascade)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func policyTitle(p string) (title, param string) {
	if p == router.PolicyCascade {
		return "cascade (small first, escalate on a failed or unconfident answer)", "confidence"
	}
	return "threshold router (score >= threshold goes to the large model)", "threshold"
}

// writePolicy writes one policy's part of the report: its choice on
// calibration, the holdout report, the misroutes, the folds and the
// frontier.
func writePolicy(b *strings.Builder, p *PolicyReport) {
	title, param := policyTitle(p.Policy)
	fmt.Fprintf(b, "\n== %s ==\n", title)
	cal := &p.Calibration
	fmt.Fprintf(b, "chosen on calibration: %s %s: %s\n", param, fmtThreshold(p.Threshold), cal.ChosenBy)
	fmt.Fprintf(b, "calibration: pass %d/%d (all-large %d, all-small %d), cost %s (all-large %s), %s %s\n",
		cal.Pass, cal.N, cal.PassAllLarge, cal.PassAllSmall, fmtCost(cal.Cost), fmtCost(cal.CostAllLarge), shareName(p.Policy), fmtPct(cal.StrongShare))
	name := "router @" + fmtThreshold(p.Threshold)
	if p.Policy == router.PolicyCascade {
		name = "cascade @" + fmtThreshold(p.Threshold)
	}
	writeHoldout(b, p, name, param)
	writeMisroutes(b, p, name)
	if f := p.Folds; f != nil {
		fmt.Fprintf(b, "folds (%d splits, seeds %d..%d): %s min/median/max %s/%s/%s; holdout pass loss %g/%g/%g; cost saving vs all-large %s/%s/%s; %s %s/%s/%s; %s\n",
			len(f.Runs), f.Runs[0].Seed, f.Runs[len(f.Runs)-1].Seed, param,
			fmtThreshold(f.Threshold[0]), fmtThreshold(f.Threshold[1]), fmtThreshold(f.Threshold[2]),
			f.PassLoss[0], f.PassLoss[1], f.PassLoss[2],
			fmtSaving(f.CostSaving[0]), fmtSaving(f.CostSaving[1]), fmtSaving(f.CostSaving[2]),
			shareName(p.Policy), fmtPct(f.StrongShare[0]), fmtPct(f.StrongShare[1]), fmtPct(f.StrongShare[2]), foldVerdict(f))
	}
	writeFrontier(b, p, param)
}

// writeHoldout writes the chosen threshold's one holdout report against
// all-large, all-small and random routing.
func writeHoldout(b *strings.Builder, p *PolicyReport, name, param string) {
	h := &p.Holdout
	fmt.Fprintf(b, "\nholdout (%d tasks, reported once for the chosen %s):\n", h.N, param)
	t := newTable(b, "policy", "pass", "cost", "cost/pass", shareName(p.Policy), "mean latency")
	// Outcomes without timings (a replayed outcome table) have every mean
	// at exactly 0: not measured, so "-", never 0 ms.
	lat := fmtMs
	if h.LatencyMeanMs == 0 && h.LatencyMeanAllLarge == 0 && h.LatencyMeanAllSmall == 0 {
		lat = func(float64) string { return "-" }
	}
	t.row(name, passOf(h.Pass, h.N), fmtCost(h.Cost), cpp(h.Cost, h.Pass), fmtPct(h.StrongShare), lat(h.LatencyMeanMs))
	t.row("all-large", passOf(h.PassAllLarge, h.N), fmtCost(h.CostAllLarge), cpp(h.CostAllLarge, h.PassAllLarge), "100%", lat(h.LatencyMeanAllLarge))
	t.row("all-small", passOf(h.PassAllSmall, h.N), fmtCost(h.CostAllSmall), cpp(h.CostAllSmall, h.PassAllSmall), "0%", lat(h.LatencyMeanAllSmall))
	rb := &h.Random
	t.row(fmt.Sprintf("random @%s (mean of %d seeds)", fmtPct(rb.StrongShare), rb.Seeds),
		fmt.Sprintf("%.1f (%d..%d)", rb.PassMean, rb.PassMin, rb.PassMax), fmtCost(rb.CostMean), "-", fmtPct(rb.StrongShare), "-")
	t.Flush()
	pd := &h.Paired
	fmt.Fprintf(b, "vs all-large, task by task (bootstrap 95%%, %d resamples): pass %+d [%+g, %+g], cost %s [%s, %s]\n",
		pd.Resamples, pd.PassDiff, pd.PassCI[0], pd.PassCI[1], fmtSigned(pd.CostDiff), fmtSigned(pd.CostCI[0]), fmtSigned(pd.CostCI[1]))
	fmt.Fprintf(b, "%s: planned %s (calibration), realised %s (holdout), drift %+.1f points\n", shareName(p.Policy),
		fmtPct(h.StrongShareCalibration), fmtPct(h.StrongShare), 100*h.StrongShareDrift)
	beat := "does not beat"
	if h.Pass > rb.PassMax {
		beat = "beats"
	}
	fmt.Fprintf(b, "vs random routing at the same share: pass %d %s the best of %d random routings (%d)\n", h.Pass, beat, rb.Seeds, rb.PassMax)
	if r := h.RouteLLM; r != nil {
		fmt.Fprintf(b, "score ranking on the holdout (RouteLLM): apgr %.3f, cpt_50 %s, cpt_80 %s (gap all-large − all-small: %d passes; random routing: apgr ≈ 0.5, cpt_50 ≈ 50%%, cpt_80 ≈ 80%%)\n",
			r.APGR, fmtPct(r.CPT50), fmtPct(r.CPT80), r.Gap)
	}
	if p.Policy == router.PolicyCascade {
		fmt.Fprintf(b, "escalations: %d of %d requests, costing %s (both calls count: small %s + large %s)\n",
			h.Escalated, h.N, fmtCost(h.EscalationCost), fmtCost(h.Cost-h.EscalationCost), fmtCost(h.EscalationCost))
	}
}

// writeMisroutes writes the holdout's misroutes: counts and costs, the
// matrix, the lost and misrouted tasks and their features.
func writeMisroutes(b *strings.Builder, p *PolicyReport, name string) {
	h := &p.Holdout
	rc := &h.Recovery
	fmt.Fprintf(b, "hard-sample recovery: the small model fails %d holdout tasks; %d went to the large model, which passes %d of them\n",
		rc.SmallFails, rc.SentLarge, rc.Recovered)
	mc := &h.MisrouteCost
	fmt.Fprintf(b, "misroutes: under %d (large calls that would fix them: %s), over %d (wasted: %s), hopeless %d (spent: %s)\n",
		h.Misroutes.Under, fmtCost(mc.Under), h.Misroutes.Over, fmtCost(mc.Over), h.Misroutes.Hopeless, fmtCost(mc.Hopeless))
	b.WriteString("misroute matrix (requests, passes, cost), rows: model that answered, columns: which models pass the task\n")
	mt := newTable(b, append([]string{"answered by"}, classNames[:]...)...)
	for _, row := range []struct {
		name  string
		cells [numClasses]Cell
	}{{"small", h.Matrix.Small}, {"large", h.Matrix.Large}} {
		cells := []string{row.name}
		for _, c := range row.cells {
			cells = append(cells, fmt.Sprintf("%d, %d, %s", c.N, c.Pass, fmtCost(c.Cost)))
		}
		mt.row(cells...)
	}
	mt.Flush()
	fmt.Fprintf(b, "verdict: %s\n", h.Verdict)
	if len(h.Lost) > 0 {
		fmt.Fprintf(b, "lost tasks (all-large passes, %s fails):\n", strings.SplitN(name, " ", 2)[0])
		writeTasks(b, h.Lost, false)
	}
	if len(h.Misrouted) > 0 {
		b.WriteString("misrouted tasks:\n")
		writeTasks(b, h.Misrouted, true)
		var kinds []string
		for _, k := range []string{"under", "hopeless", "over"} {
			fc := h.MisrouteFeatures[k]
			if len(fc) == 0 {
				continue
			}
			tags := make([]string, 0, len(fc))
			for tag := range fc {
				tags = append(tags, tag)
			}
			sort.Slice(tags, func(i, j int) bool {
				if fc[tags[i]] != fc[tags[j]] {
					return fc[tags[i]] > fc[tags[j]]
				}
				return tags[i] < tags[j]
			})
			var parts []string
			for _, tag := range tags {
				parts = append(parts, fmt.Sprintf("%s %d", tag, fc[tag]))
			}
			kinds = append(kinds, k+": "+strings.Join(parts, ", "))
		}
		fmt.Fprintf(b, "features of misrouted tasks: %s\n", strings.Join(kinds, "; "))
	}
}

// writeFrontier writes the calibration's cost–pass frontier, each point
// replayed on the holdout.
func writeFrontier(b *strings.Builder, p *PolicyReport, param string) {
	h := &p.Holdout
	what := "cost-pass"
	if !costed(p.Sweep) {
		what = "large-calls–pass (cost not measured)"
	}
	fmt.Fprintf(b, "%s Pareto frontier on calibration (* chosen), each point replayed on the holdout:\n", what)
	pt := newTable(b, "", param, shareName(p.Policy), "cal pass", "cal cost", "holdout pass", "holdout cost")
	for i := range p.Sweep {
		s := &p.Sweep[i]
		if !s.Frontier && s.Threshold != p.Threshold {
			continue
		}
		mark := ""
		if s.Threshold == p.Threshold {
			mark = "*"
		}
		hp := &h.Curve[i]
		pt.row(mark, fmtThreshold(s.Threshold), fmtPct(s.StrongShare), passOf(s.Pass, s.N), fmtCost(s.Cost), passOf(hp.Pass, hp.N), fmtCost(hp.Cost))
	}
	pt.Flush()
}

func shareName(policy string) string {
	if policy == router.PolicyCascade {
		return "escalated"
	}
	return "strong share"
}

// writeTasks writes a table of tasks, with their misroute kind when kind.
func writeTasks(b *strings.Builder, ts []Task, kind bool) {
	h := []string{"id", "group", "score", "features", "to", "small", "large"}
	if kind {
		h = append([]string{"kind"}, h...)
	}
	t := newTable(b, h...)
	for _, x := range ts {
		row := []string{x.ID, x.Group, strconv.FormatFloat(x.Score, 'f', 3, 64), x.Features, x.To, outcomeText(x.Small), outcomeText(x.Large)}
		if kind {
			row = append([]string{x.Kind}, row...)
		}
		t.row(row...)
	}
	t.Flush()
}

// outcomeText is "pass", "ok, wrong" or the failed outcome, with the
// confidence when known.
func outcomeText(o Outcome) string {
	s := o.Outcome
	switch {
	case o.Pass:
		s = "pass"
	case o.OK:
		s = "ok, wrong"
	}
	if o.Confidence > 0 {
		s += " (conf " + strconv.FormatFloat(o.Confidence, 'f', 2, 64) + ")"
	}
	return s
}

// table is a report table: indented two spaces, its columns two spaces
// apart (text/tabwriter); the rows go in with row, then Flush.
type table struct{ *tabwriter.Writer }

// newTable starts a table on w with its header row.
func newTable(w io.Writer, header ...string) table {
	t := table{tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	t.row(header...)
	return t
}

func (t table) row(cells ...string) { fmt.Fprintln(t, "  "+strings.Join(cells, "\t")) }

// fmtThreshold prints a threshold with enough digits to tell neighbours
// apart in a report (the JSON keeps full precision).
func fmtThreshold(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// fmtCost prints a cost with 4 significant digits; "-" when unmeasured.
func fmtCost(v Figure) string {
	switch {
	case !v.Measured():
		return "-"
	case v == 0:
		return "0"
	}
	return strconv.FormatFloat(float64(v), 'g', 4, 64)
}

func fmtSigned(v Figure) string {
	if v >= 0 {
		return "+" + fmtCost(v)
	}
	return fmtCost(v)
}

func cpp(cost Figure, pass int) string {
	if pass == 0 {
		return "-"
	}
	return fmtCost(cost / Figure(pass))
}

// fmtSaving prints a cost saving as a percentage; "-" when unmeasured.
func fmtSaving(v Figure) string {
	if !v.Measured() {
		return "-"
	}
	return fmtPct(float64(v))
}

func passOf(pass, n int) string { return fmt.Sprintf("%d/%d", pass, n) }

func fmtPct(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + "%" }

func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " ms" }

// foldVerdict says how many folds kept the rule on their holdout, and
// lists every fold's holdout pass loss against all-large as it is.
func foldVerdict(f *Folds) string {
	losses := make([]string, len(f.Runs))
	for i, r := range f.Runs {
		losses[i] = strconv.Itoa(r.PassLoss)
	}
	var kept string
	switch {
	case f.Within != nil:
		kept = fmt.Sprintf("within the allowed loss on the holdout in %d of %d", *f.Within, len(f.Runs))
	case f.WithinBudget != nil:
		kept = fmt.Sprintf("within the budget per request on the holdout in %d of %d (a budget allows no loss figure)", *f.WithinBudget, len(f.Runs))
	}
	return kept + "; holdout pass loss per fold: " + strings.Join(losses, ", ")
}
