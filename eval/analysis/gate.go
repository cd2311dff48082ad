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

// qualityFail says how candidate breaks the gate's rule on passing tasks;
// "" when it does not.
func qualityFail(baseline, candidate *ArmSummary, g GateConfig) string {
	p := candidate.Paired
	counts := fmt.Sprintf("passes %d of %d vs %d of %d for %s", candidate.Pass, candidate.N, baseline.Pass, baseline.N, baseline.Name)
	if p == nil {
		if candidate.Pass < baseline.Pass {
			return "passes fewer tasks than the baseline: " + counts
		}
		return ""
	}
	lost := len(p.Lost)
	if g.Rule == RuleNet {
		lost -= len(p.Gained)
	}
	if lost <= g.MaxLost {
		if len(p.Lost) == 0 && candidate.Pass < baseline.Pass {
			return "passes fewer tasks than the baseline: " + counts // on tasks the baseline did not run
		}
		return ""
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
	return msg + " (" + counts + ")"
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
	check("cost per pass", "", g.CostPerPassRegressPct, a.CostPerPass, base.CostPerPass, nil)
	return fails, unclear
}

// improves reports whether candidate improves the gate's objective: the
// paired interval of its per-task delta excludes 0 on the better side, by
// more than the gate's minimum effect (a share of the baseline's mean per
// task, so that an identical twin's jitter is never an improvement).
func improves(base, a *ArmSummary, g GateConfig) (bool, string) {
	p := a.Paired
	m := g.MinEffect() / 100
	latScale, costScale := base.MeanMs, 0.0
	if base.N > 0 {
		costScale = base.Cost / float64(base.N)
	}
	below := func(d *Delta, scale float64) bool { return d != nil && d.CIHigh < -m*scale && d.CIHigh < 0 }
	switch g.Objective {
	case ObjectiveLatency:
		return below(p.LatencyDeltaMs, latScale), "per-task latency"
	case ObjectiveCost:
		return below(p.CostDelta, costScale), "per-task cost"
	case ObjectiveGoodput:
		return p.GoodputDelta != nil && p.GoodputDelta.CILow > m, "goodput"
	}
	return below(p.LatencyDeltaMs, latScale) || below(p.CostDelta, costScale), "per-task latency or cost"
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
	case base.Pass == 0:
		return judgement{verdict: VerdictInconclusive, why: []string{"inconclusive: the baseline passes nothing, so there is no quality to hold a candidate to"}}
	case a.Paired.Pairs < g.MinPairs:
		return judgement{verdict: VerdictInconclusive, why: []string{fmt.Sprintf("inconclusive: %s, fewer than the %d a verdict needs", words.Count(a.Paired.Pairs, "matched pair"), g.MinPairs)}}
	}
	quality := false
	if f := qualityFail(base, a, g); f != "" {
		fails, quality = append(fails, f), true
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
	if gap := errorRateGap(base, a); gap != "" && in.timed {
		why = append(why, "inconclusive: "+gap+": a backend that failed unevenly between arms, not evidence about the stack; re-run when it is steady")
	}
	for _, u := range unclear {
		why = append(why, "inconclusive: "+u+"; more tasks or repeats would decide it")
	}
	if u := falseHitUnclear(a, g); u != "" {
		why = append(why, "inconclusive: "+u)
	}
	if !a.LeaksMeasured() && !g.Waived(WaiveLeaks) {
		why = append(why, fmt.Sprintf("inconclusive: %s could not be checked for leaks (the records do not say which scope each answer was built for); waive leaks in the gate to decide without that check",
			words.Count(a.LeaksUnchecked, "cache hit")))
	}
	if len(why) > 0 {
		return judgement{verdict: VerdictInconclusive, why: why}
	}
	ok, what := improves(base, a, g)
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
	in := func(a *ArmSummary) gateInput {
		return gateInput{g: g, incomplete: opt.Incomplete, allowContractChange: opt.AllowContractChange, timed: timed}
	}
	// The A/A control is judged first: a twin of the baseline that is not
	// no_gain says the backend or the method cannot tell arms apart.
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
		if a.Name == g.Control && j.verdict != VerdictNoGain {
			miscalibrated = fmt.Sprintf("the A/A control %s, an identical copy of %s, came out %s instead of no_gain", a.Name, base.Name, j.verdict)
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
		if w := weakLoss(a); w != "" {
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
	a.Reasons = append(a.Reasons, passReason(base, a), latencyReason(base, a), costReason(base, a))
	if g.Objective == ObjectiveGoodput {
		a.Reasons = append(a.Reasons, goodputReason(a, g))
	}
	ap95, bp95 := figure.Pair(a.P95Ms, base.P95Ms, figure.Ms)
	acpp, bcpp := figure.CostPerPassPair(a.CostPerPass, base.CostPerPass)
	figures := fmt.Sprintf("passes %d of %d vs %d of %d for %s; p95 %s vs %s ms; cost per pass %s vs %s",
		a.Pass, a.N, base.Pass, base.N, base.Name, ap95, bp95, acpp, bcpp)
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
