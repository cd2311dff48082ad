package analysis

import (
	"fmt"
	"strings"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// Decision is the verdict over every candidate: quality gate first, speed
// and cost second.
type Decision struct {
	Accepted     []string `json:"accepted"`
	Rejected     []string `json:"rejected"`
	NoGain       []string `json:"no_gain"`
	Inconclusive []string `json:"inconclusive"`
	Incomplete   []string `json:"incomplete"`
	Summary      string   `json:"summary"` // one sentence per candidate
	// Warnings say where the figures are weaker than they look: tail
	// percentiles that are the sample maximum, few pairs, an interrupted
	// run, failures clustered in time, a rejection that rests on a
	// statistically weak loss.
	Warnings []string `json:"warnings"`
	// WhatWouldChange says, per candidate, what evidence would change its
	// verdict.
	WhatWouldChange map[string]string `json:"what_would_change"`
	// Miscalibrated, when set, says why the run's A/A control (a twin of
	// the baseline) does not vouch for the backend: no candidate is
	// accepted then.
	Miscalibrated string `json:"miscalibrated,omitempty"`
}

// qualityFail says how candidate breaks the gate's quality rule; "" when
// it does not. Under rule margin, unclear says why the rule cannot decide
// (the interval reaches both sides of the margin), with the tasks that
// would decide it.
func qualityFail(base, candidate *ArmSummary, in gateInput) (fail, unclear string) {
	g := in.g
	if !sampleRule(g.Rule) {
		q := qualityCheck(candidate.Paired, g, in.noise, in.sizing)
		if q == nil {
			return "", ""
		}
		return marginWords(base, candidate, q, in)
	}
	p := candidate.Paired
	counts := fmt.Sprintf("passes %d of %d vs %d of %d for %s", candidate.Pass, candidate.N, base.Pass, base.N, base.Name)
	if p == nil {
		if candidate.Pass < base.Pass {
			return "passes fewer tasks than the baseline: " + counts, ""
		}
		return "", ""
	}
	lost := len(p.Lost)
	if g.Rule == RuleNet {
		lost -= len(p.Gained)
	}
	if lost <= g.MaxLost {
		if len(p.Lost) == 0 && candidate.Pass < base.Pass {
			return "passes fewer tasks than the baseline: " + counts, "" // on tasks the baseline did not run
		}
		return "", ""
	}
	msg := fmt.Sprintf("loses %s: %s", words.Count(len(p.Lost), "passing task"), words.Shortlist(p.Lost))
	if len(p.Gained) > 0 {
		msg += fmt.Sprintf(", gains %d: %s", len(p.Gained), words.Shortlist(p.Gained))
	}
	if len(p.LostCauses) > 0 {
		causes := make([]string, 0, len(p.LostCauses))
		for _, k := range sortedKeys(p.LostCauses) {
			causes = append(causes, fmt.Sprintf("%s %d", strings.ReplaceAll(k, "_", " "), p.LostCauses[k]))
		}
		msg += "; lost to " + strings.Join(causes, ", ")
	}
	msg += " (" + counts + ")"
	if in.noise.varies() {
		msg += fmt.Sprintf(" under sample rule %s, though outcomes vary between identical calls (noise floor: %s of %s, %s, differ): some of this loss may be noise; rule margin judges pass rates", g.Rule,
			words.Count(*in.noise.VaryingTasks, "task"), words.Count(*in.noise.Tasks, "task"), figure.Pct(*in.noise.Share))
	}
	return msg, ""
}

// meanRepeats is the mean number of matched pairs per task.
func meanRepeats(p *Paired) float64 {
	if p == nil || len(p.tasks) == 0 {
		return 0
	}
	return float64(p.Pairs) / float64(len(p.tasks))
}

// marginWords words rule margin's result: a fail when quality is broken,
// an unclear reason when it is inconclusive.
func marginWords(base, a *ArmSummary, q *QualityCheck, in gateInput) (fail, unclear string) {
	alpha := in.g.ErrorRate()
	margin := figure.Trim(fmt.Sprint(*q.Margin))
	switch q.Result {
	case QualityBroken:
		moved := movedMost(a.Paired.tasks)
		msg := fmt.Sprintf("loses pass rate: %s, wholly below the -%s-point margin", qualityWords(q, base.Name, alpha), margin)
		if len(moved) > 0 {
			msg += "; moved most: " + words.Shortlist(moved)
		}
		return msg, ""
	case QualityInconclusive:
		msg := fmt.Sprintf("quality: %s reaches below the -%s-point margin without lying wholly below it", qualityWords(q, base.Name, alpha), margin)
		at := "at the spread measured here"
		if in.noise.measured() {
			at += fmt.Sprintf(" and the noise floor (%s of tasks vary)", figure.Pct(*in.noise.Share))
		}
		if r := meanRepeats(a.Paired); r > 1 {
			at += fmt.Sprintf(", %s repeats per task", figure.Trim(fmt.Sprintf("%.1f", r)))
		}
		switch {
		case q.TasksToDecide != nil:
			msg += fmt.Sprintf("; would decide at about %s %s", words.Count(*q.TasksToDecide, "task"), at)
			if r := q.RepeatsToDecide; r != nil {
				msg += fmt.Sprintf(", or at about %d repeats of these %s", *r, words.Count(q.Tasks, "task"))
			}
		case in.sizing:
			msg += "; the pass rate differs by about the margin itself, so no number of tasks decides it"
		}
		return "", msg
	}
	return "", ""
}

// hardFails are the failures no drift or interruption excuses: leaking
// cache hits, invalid answers recorded ok, different work (unless
// interrupted: an interrupted run leaves tasks on one side only).
func hardFails(candidate *ArmSummary, interrupted bool) []string {
	var fails []string
	p := candidate.Paired
	if n := candidate.LeakCount(); n > 0 {
		kinds := make([]string, 0, len(candidate.Leaks))
		for _, k := range sortedKeys(candidate.Leaks) {
			if candidate.Leaks[k] > 0 {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, candidate.Leaks[k]))
			}
		}
		fails = append(fails, fmt.Sprintf("leaks: %s served from another scope (%s)", words.Count(n, "cache hit"), strings.Join(kinds, ", ")))
	}
	if candidate.SilentViolations > 0 {
		fails = append(fails, fmt.Sprintf("lets invalid answers through: %s recorded ok that break the contract", words.Count(candidate.SilentViolations, "answer")))
	}
	if p != nil && len(p.Unmatched) > 0 && !interrupted {
		fails = append(fails, fmt.Sprintf("ran different work: %s on one side only: %s", words.Count(len(p.Unmatched), "task"), words.Shortlist(p.Unmatched)))
	}
	return fails
}

// atLimit is the relative tolerance within which a figure counts as at a
// limit rather than beyond it: decimal figures such as 1.1 against 1.0 at
// +10% are at the limit, whatever binary floating point makes of them.
const atLimit = 1e-9

// beyond reports whether v exceeds limit by more than floating-point noise.
func beyond(v, limit float64) bool { return v > limit*(1+atLimit)+atLimit*1e-300 }

// guardrailFails lists the guardrails candidate breaks: figures that
// regress beyond the gate's limit against the baseline. A figure whose
// point estimate is beyond the limit but whose paired interval (see
// Paired.P95Ratio) reaches inside it is not shown to break the guardrail:
// it is returned in unclear instead, and makes the verdict inconclusive.
func guardrailFails(base, a *ArmSummary, g GateConfig) (fails, unclear []string) {
	var ratios struct{ p95, ttft *Ratio }
	if p := a.Paired; p != nil {
		ratios.p95, ratios.ttft = p.P95Ratio, p.TTFTP95Ratio
	}
	check := func(name, unit string, limit *float64, av, bv *float64, r *Ratio) {
		if limit == nil || av == nil || bv == nil || *bv <= 0 {
			return
		}
		// av/bv - 1 > limit/100, multiplied out so that a figure exactly
		// at the limit (110 against 100 at 10%) is not pushed over it by
		// floating-point division.
		if !beyond(*av*100, *bv*(100+*limit)) {
			return
		}
		sa, sb := figure.Pair(*av, *bv, figure.Ms)
		if unit == "" {
			sa, sb = figure.CostPerPassPair(av, bv)
		}
		change := figure.RelChangeVsLimit(*av, *bv, *limit)
		lim := figure.Trim(fmt.Sprint(*limit))
		if r != nil && !beyond(r.CILow*100, 100+*limit) {
			unclear = append(unclear, fmt.Sprintf("%s %s vs %s%s%s is beyond the +%s%% allowed, but its paired 95%% interval (%s to %s) reaches within it",
				name, sa, sb, unit, change, lim, figure.RatioPct(r.CILow, *limit), figure.RatioPct(r.CIHigh, *limit)))
			return
		}
		fails = append(fails, fmt.Sprintf("breaks a guardrail: %s %s vs %s%s%s, beyond the +%s%% allowed", name, sa, sb, unit, change, lim))
	}
	check("p95", " ms", g.P95RegressPct, &a.P95Ms, &base.P95Ms, ratios.p95)
	check("TTFT p95", " ms", g.TTFTP95RegressPct, a.TTFTP95Ms, base.TTFTP95Ms, ratios.ttft)
	var cpp *Ratio
	if a.Paired != nil {
		cpp = costPerPassRatio(a.Paired.tasks, g.ErrorRate())
	}
	check("cost per pass", "", g.CostPerPassRegressPct, a.CostPerPass, base.CostPerPass, cpp)
	return fails, unclear
}

// improves reports whether candidate improves the gate's objective: on
// one of the figures it may win on (claims), the paired delta is better
// than the gate's minimum effect (a share of the baseline's mean per task,
// so that an identical twin's jitter is never an improvement) at the level
// the run's family gave that figure (holm).
func improves(base, a *ArmSummary, in gateInput) (bool, string) {
	what := map[string]string{figLatency: "per-task latency", figCost: "per-task cost", figGoodput: "goodput"}
	cs := claims(base, a, in.g)
	ok := false
	for _, c := range cs {
		if level, in := in.levels[c.figure]; in && level >= 0 && c.p <= level {
			ok = true
		}
	}
	if len(cs) == 2 {
		return ok, "per-task latency or cost"
	}
	if len(cs) == 0 {
		return false, "the objective"
	}
	return ok, what[cs[0].figure]
}

// gateInput is what the gate knows of one comparison beyond the two
// summaries.
type gateInput struct {
	g                   GateConfig
	incomplete          string
	allowContractChange bool
	// timed: the records carry send times, so differences between arms
	// can be told apart from a backend that changed over time.
	timed bool
	// miscalibrated says why the run's A/A control does not vouch for
	// the backend ("" when it does or there is none): no candidate is
	// accepted then.
	miscalibrated string
	// levels are the levels the run's family (holm) gave this
	// candidate's objective figures.
	levels map[string]float64
	// noise is the run's noise floor.
	noise *Noise
	// sizing finds how many tasks would decide an inconclusive quality
	// rule (off for the re-runs of the gate on edited outcomes, which
	// need only the verdict).
	sizing bool
}

// judgement is the gate's verdict on one candidate.
type judgement struct {
	verdict string
	fails   []string // reject: what breaks the gate
	why     []string // incomplete or inconclusive: why
	what    string   // the objective, as improves names it
	quality bool     // rejected (or inconclusive) on the quality rule
}

// judge applies the gate to one candidate, in this order: failures nothing
// excuses (leaks, invalid answers, different work, false hits) reject; an
// interrupted arm is incomplete; a comparison with no quality to hold to
// or too few pairs is inconclusive; the quality rule and the guardrails
// reject, before anything about the backend can soften them (a candidate
// that fails more is never judged more kindly); then clustered failures,
// an uneven error rate, a guardrail that may or may not be broken, and
// hits whose leaks were not measured make the verdict inconclusive; what
// is left is accepted if it improves the objective, else no_gain.
func judge(base, a *ArmSummary, in gateInput) judgement {
	g := in.g
	fails := hardFails(a, in.incomplete != "")
	if f := falseHitFail(a, g); f != "" {
		fails = append(fails, f)
	}
	if differ, _, msg := ContractChange(base, a); differ && !in.allowContractChange {
		fails = append(fails, "ran different work: "+msg+"; a changed contract changes what counts as done (allow the contract change to compare anyway)")
	}
	if len(fails) > 0 {
		return judgement{verdict: VerdictReject, fails: fails}
	}
	switch {
	case in.incomplete != "":
		return judgement{verdict: VerdictIncomplete, why: []string{"incomplete: " + in.incomplete}}
	case a.Outcomes[records.OutcomeCancelled] > 0 || base.Outcomes[records.OutcomeCancelled] > 0:
		return judgement{verdict: VerdictIncomplete, why: []string{fmt.Sprintf("incomplete: the run was interrupted (%s and %s cancelled in this arm and the baseline); only a complete run decides",
			words.Count(a.Outcomes[records.OutcomeCancelled], "request"), words.Count(base.Outcomes[records.OutcomeCancelled], "request"))}}
	case qualityUnmeasured(base, a, g) != "":
		return judgement{verdict: VerdictInconclusive, why: []string{qualityUnmeasured(base, a, g)}}
	case base.Pass == 0 && unmeasuredBy(base, a, records.FigureQuality) == "":
		return judgement{verdict: VerdictInconclusive, why: []string{"inconclusive: the baseline passes nothing, so there is no quality to hold a candidate to"}}
	case a.Paired.Pairs < g.MinPairs:
		return judgement{verdict: VerdictInconclusive, why: []string{fmt.Sprintf("inconclusive: %s, fewer than the %d a verdict needs", words.Count(a.Paired.Pairs, "matched pair"), g.MinPairs)}}
	}
	quality, qualityUnclear := false, ""
	if unmeasuredBy(base, a, records.FigureQuality) == "" {
		f, u := qualityFail(base, a, in)
		if f != "" {
			fails, quality = append(fails, f), true
		}
		qualityUnclear = u
	}
	if f := failureFail(base, a, g); f != "" {
		fails = append(fails, f)
	}
	if a.OK == 0 {
		fails = append(fails, "no request succeeded")
	}
	rails, unclear := guardrailFails(base, a, g)
	fails = append(fails, rails...)
	if len(fails) > 0 {
		return judgement{verdict: VerdictReject, fails: fails, quality: quality}
	}
	var why []string
	if qualityUnclear != "" {
		why = append(why, "inconclusive: "+qualityUnclear)
	}
	if gap := errorRateGap(base, a); gap != "" && in.timed {
		why = append(why, "inconclusive: "+gap+": a backend that failed unevenly between arms, not evidence about the stack; re-run when it is steady")
	}
	for _, u := range unclear {
		why = append(why, "inconclusive: "+u+"; more tasks or repeats would decide it")
	}
	if u := falseHitUnclear(a, g); u != "" {
		why = append(why, "inconclusive: "+u)
	}
	why = append(why, unmeasuredWhy(base, a, g)...)
	if !a.LeaksMeasured() && !g.Waived(WaiveLeaks) {
		why = append(why, fmt.Sprintf("inconclusive: %s could not be checked for leaks (the records do not say which scope each answer was built for); waive leaks in the gate to decide without that check",
			words.Count(a.LeaksUnchecked, "cache hit")))
	}
	if len(why) > 0 {
		return judgement{verdict: VerdictInconclusive, why: why}
	}
	ok, what := improves(base, a, in)
	switch {
	case ok && in.miscalibrated != "":
		return judgement{verdict: VerdictInconclusive, what: what, why: []string{"inconclusive: improves " + what + ", but " + in.miscalibrated + ", so no candidate is accepted"}}
	case ok:
		return judgement{verdict: VerdictAccept, what: what}
	}
	return judgement{verdict: VerdictNoGain, what: what}
}

// decide sets every arm's verdict and reasons and fills s.Decision (see
// judge for the order of the rules). A verdict that rests on windows of
// the run where the backend stalled or failed is checked again on the
// pairs outside them (ArmSummary.Outside): an accept, or a rejection on
// the quality rule or a guardrail, that does not hold there is
// inconclusive.
func decide(s *Summary, opt Options) {
	g := opt.gate()
	d := Decision{Accepted: []string{}, Rejected: []string{}, NoGain: []string{}, Inconclusive: []string{}, Incomplete: []string{},
		Warnings: []string{}, WhatWouldChange: map[string]string{}}
	base := &s.Arms[0]
	base.Verdict = VerdictBaseline
	for _, c := range s.Clusters {
		d.Warnings = append(d.Warnings, "failures clustered in time: "+c.String()+"; arms affected: "+strings.Join(c.Arms, ", ")+
			": an outage or drift of the backend, not evidence about an arm; verdicts that rest on it are inconclusive")
	}
	for _, w := range s.Stalls {
		d.Warnings = append(d.Warnings, "latency stalled: "+w.String()+": verdicts that rest on that window are inconclusive")
	}
	timed := s.Timed
	fam := holm(s, g)
	in := func(a *ArmSummary) gateInput {
		return gateInput{g: g, incomplete: opt.Incomplete, allowContractChange: opt.AllowContractChange, timed: timed,
			levels: fam.levels[a.Name], noise: s.Noise, sizing: true}
	}
	for i := 1; i < len(s.Arms); i++ {
		if unmeasuredBy(base, &s.Arms[i], records.FigureQuality) == "" {
			a := &s.Arms[i]
			a.Quality = qualityCheck(a.Paired, g, s.Noise, true)
			if a.Quality != nil && sampleRule(g.Rule) {
				if f, _ := qualityFail(base, a, in(a)); f != "" {
					a.Quality.Result = QualityBroken
				}
			}
		}
	}
	// The A/A control is judged first: a twin of the baseline that differs
	// from it beyond chance, or that the gate accepts or rejects, says the
	// backend or the method cannot tell arms apart.
	miscalibrated := ""
	order := make([]int, 0, len(s.Arms))
	for i := 1; i < len(s.Arms); i++ {
		if s.Arms[i].Name == g.Control {
			order = append([]int{i}, order...)
		} else {
			order = append(order, i)
		}
	}
	sentences := make([]string, len(s.Arms))
	for _, i := range order {
		a := &s.Arms[i]
		gi := in(a)
		gi.miscalibrated = miscalibrated
		j := judgeInTime(base, a, gi)
		if differ, unknown, msg := ContractChange(base, a); differ && !opt.AllowContractChange {
			d.Warnings = append(d.Warnings, a.Name+": "+msg+": the comparison is of different work, so the gate rejects it")
		} else if differ {
			d.Warnings = append(d.Warnings, a.Name+": "+msg+": compared anyway because the contract change was allowed, but the two arms did different work")
		} else if unknown {
			d.Warnings = append(d.Warnings, a.Name+": "+msg)
		}
		sentences[i] = record(&d, base, a, j, gi)
		if a.Name != g.Control {
			continue
		}
		tb, ta := twinBasis(base, a)
		switch differs := twinDiffers(tb, ta, g); {
		case j.verdict == VerdictAccept || j.verdict == VerdictReject || j.verdict == VerdictIncomplete:
			miscalibrated = fmt.Sprintf("the A/A control %s, an identical copy of %s, came out %s instead of no_gain", a.Name, base.Name, j.verdict)
		case differs != "":
			miscalibrated = fmt.Sprintf("the A/A control %s, an identical copy of %s: %s", a.Name, base.Name, differs)
		}
		if miscalibrated != "" {
			d.Warnings = append(d.Warnings, "miscalibrated: "+miscalibrated+": the backend or the load moved enough to make identical arms differ, so no candidate is accepted; check the backend before believing any result")
			d.Miscalibrated = miscalibrated
		}
	}
	var said []string
	for _, sn := range sentences {
		if sn != "" {
			said = append(said, sn)
		}
	}
	if len(said) == 0 {
		d.Summary = "only one arm (" + base.Name + "): nothing to compare"
	} else {
		d.Summary = strings.Join(said, " ")
	}
	d.Warnings = append(tailWarnings(s.Arms), d.Warnings...)
	d.Warnings = append(d.Warnings, fewPairsWarnings(s.Arms)...)
	d.Warnings = append(d.Warnings, lagWarnings(s.Arms, g)...)
	d.Warnings = append(d.Warnings, opt.Warnings...)
	s.family = fam
	if opt.Incomplete != "" {
		d.Warnings = append(d.Warnings, "the run is incomplete: "+opt.Incomplete)
	}
	for i := range s.Arms {
		if c := s.Arms[i].Outcomes[records.OutcomeCancelled]; c > 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s: %s cancelled: the run was interrupted, so its figures cover an incomplete pass",
				s.Arms[i].Name, words.Count(c, "request")))
		}
	}
	s.Decision = d
}

// judgeInTime is judge, checked again on the pairs outside the windows
// where the backend stalled or failed (a.Outside): an accept, or a
// rejection on the quality rule or a guardrail, that does not hold there
// rests on those windows and is inconclusive.
func judgeInTime(base, a *ArmSummary, in gateInput) judgement {
	j := judge(base, a, in)
	if a.Outside == nil || (j.verdict != VerdictAccept && j.verdict != VerdictReject) {
		return j
	}
	if j.verdict == VerdictReject && hasHardFail(base, a, in) {
		return j
	}
	ob, oa := outsideArms(base, a)
	o := judge(ob, oa, in)
	if o.verdict == j.verdict {
		return j
	}
	if a.Outside.switchback {
		return switchbackOutside(o, a)
	}
	first := j.fails
	if j.verdict == VerdictAccept {
		first = []string{"improves " + j.what}
	}
	return judgement{verdict: VerdictInconclusive, why: []string{fmt.Sprintf("inconclusive: %s over the whole run, but is %s on the %s outside the windows where the backend stalled or failed (see the warnings): the verdict rests on those windows",
		strings.TrimPrefix(first[0], "breaks a guardrail: "), o.verdict, words.Count(a.Outside.Pairs, "pair"))}}
}

// hasHardFail reports whether a rejection rests on a failure no window of
// the run explains (leaks, invalid answers, different work, false hits).
func hasHardFail(base, a *ArmSummary, in gateInput) bool {
	if len(hardFails(a, in.incomplete != "")) > 0 || falseHitFail(a, in.g) != "" {
		return true
	}
	differ, _, _ := ContractChange(base, a)
	return differ && !in.allowContractChange
}

// outsideArms are copies of the two summaries with the paired figures and
// pass counts of the pairs outside the stall and failure windows.
func outsideArms(base, a *ArmSummary) (*ArmSummary, *ArmSummary) {
	ob, oa := *base, *a
	o := a.Outside
	oa.Paired = o
	ob.Pass, oa.Pass = o.basePass, o.candPass
	ob.N, oa.N = o.Pairs, o.Pairs
	ob.OK, oa.OK = o.baseOK, o.candOK
	ob.Cost, oa.Cost = o.baseCost, o.candCost
	ob.CostPerPass, oa.CostPerPass = perPass(o.baseCost, o.basePass), perPass(o.candCost, o.candPass)
	if r := o.P95Ratio; r != nil {
		oa.P95Ms = base.P95Ms * r.Point
	}
	if r := o.TTFTP95Ratio; r != nil && base.TTFTP95Ms != nil {
		v := *base.TTFTP95Ms * r.Point
		oa.TTFTP95Ms = &v
	}
	return &ob, &oa
}

// record writes one candidate's judgement into its summary and the
// decision, and returns its sentence for the decision's summary.
func record(d *Decision, base, a *ArmSummary, j judgement, in gateInput) string {
	g := in.g
	switch j.verdict {
	case VerdictReject:
		a.Verdict = VerdictReject
		a.Reasons = append(a.Reasons, j.fails...)
		if r := notRescued(base, a); r != "" {
			a.Reasons = append(a.Reasons, r)
		}
		d.Rejected = append(d.Rejected, a.Name)
		d.WhatWouldChange[a.Name] = changeReject(base, a, in)
		if w := weakLoss(a); w != "" && sampleRule(g.Rule) { // rule margin's interval already weighs the loss
			d.Warnings = append(d.Warnings, w)
		}
		return a.Name + " rejected: " + j.fails[0] + "."
	case VerdictIncomplete:
		a.Verdict = j.verdict
		a.Reasons = append(a.Reasons, j.why...)
		d.Incomplete = append(d.Incomplete, a.Name)
		d.WhatWouldChange[a.Name] = "a complete run of " + a.Name + " and " + base.Name
		return a.Name + " incomplete: " + strings.TrimPrefix(j.why[0], "incomplete: ") + "."
	case VerdictInconclusive:
		a.Verdict = j.verdict
		a.Reasons = append(a.Reasons, j.why...)
		d.Inconclusive = append(d.Inconclusive, a.Name)
		d.WhatWouldChange[a.Name] = a.Name + " would be decided by a comparison the data can carry: " + strings.TrimPrefix(j.why[0], "inconclusive: ")
		return a.Name + " inconclusive: " + strings.TrimPrefix(j.why[0], "inconclusive: ") + "."
	}
	pass := passReason(base, a)
	if q := a.Quality; q != nil && q.Margin != nil && unmeasuredBy(base, a, records.FigureQuality) == "" {
		pass += fmt.Sprintf("; quality holds: %s, above the -%s-point margin", qualityWords(q, base.Name, g.ErrorRate()), figure.Trim(fmt.Sprint(*q.Margin)))
	}
	a.Reasons = append(a.Reasons, pass, latencyReason(base, a), costReason(base, a))
	if g.Objective == ObjectiveGoodput {
		a.Reasons = append(a.Reasons, goodputReason(a, g))
	}
	ap95, bp95 := figure.Pair(a.P95Ms, base.P95Ms, figure.Ms)
	acpp, bcpp := figure.CostPerPassPair(a.CostPerPass, base.CostPerPass)
	passes := fmt.Sprintf("passes %d of %d vs %d of %d for %s", a.Pass, a.N, base.Pass, base.N, base.Name)
	if unmeasuredBy(base, a, records.FigureQuality) != "" {
		passes = "quality not measured"
	}
	figures := fmt.Sprintf("%s; p95 %s vs %s ms; cost per pass %s vs %s", passes, ap95, bp95, acpp, bcpp)
	if j.verdict == VerdictAccept {
		a.Verdict = VerdictAccept
		d.Accepted = append(d.Accepted, a.Name)
		d.WhatWouldChange[a.Name] = changeToReject(base, a, in)
		return a.Name + " accepted: " + figures + "."
	}
	a.Verdict = VerdictNoGain
	a.Reasons = append([]string{"no gain: passes the gate, but " + j.what + " does not improve by more than " + figure.Trim(fmt.Sprint(g.MinEffect())) + "% of the baseline's with a 95% interval that excludes 0"}, a.Reasons...)
	d.NoGain = append(d.NoGain, a.Name)
	d.WhatWouldChange[a.Name] = a.Name + " would be accepted with an improvement of " + j.what + " beyond " + figure.Trim(fmt.Sprint(g.MinEffect())) + "% of the baseline's whose 95% interval excludes 0; " + changeToReject(base, a, in)
	return a.Name + " no gain: " + figures + "."
}
