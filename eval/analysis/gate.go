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

// guardrailFails lists the guardrails candidate breaks: figures that
// regress beyond the gate's limit against the baseline.
func guardrailFails(base, a *ArmSummary, g GateConfig) []string {
	var fails []string
	check := func(name, unit string, limit *float64, av, bv *float64) {
		if limit == nil || av == nil || bv == nil || *bv <= 0 {
			return
		}
		// av/bv - 1 > limit/100, multiplied out so that a figure exactly
		// at the limit (110 against 100 at 10%) is not pushed over it by
		// floating-point division.
		if *av*100 > *bv*(100+*limit) {
			sa, sb := figure.Pair(*av, *bv, figure.Ms)
			if unit == "" {
				sa, sb = figure.CostPerPassPair(av, bv)
			}
			fails = append(fails, fmt.Sprintf("breaks a guardrail: %s %s vs %s%s%s, beyond the +%s%% allowed", name, sa, sb, unit, figure.RelChange(*av, *bv), figure.Trim(fmt.Sprint(*limit))))
		}
	}
	check("p95", " ms", g.P95RegressPct, &a.P95Ms, &base.P95Ms)
	check("TTFT p95", " ms", g.TTFTP95RegressPct, a.TTFTP95Ms, base.TTFTP95Ms)
	check("cost per pass", "", g.CostPerPassRegressPct, a.CostPerPass, base.CostPerPass)
	return fails
}

// improves reports whether candidate improves the gate's objective: the
// paired interval of its per-task delta excludes 0 on the better side.
func improves(a *ArmSummary, g GateConfig) (bool, string) {
	p := a.Paired
	below := func(d *Delta) bool { return d != nil && d.CIHigh < 0 }
	switch g.Objective {
	case ObjectiveLatency:
		return below(p.LatencyDeltaMs), "per-task latency"
	case ObjectiveCost:
		return below(p.CostDelta), "per-task cost"
	case ObjectiveGoodput:
		return p.GoodputDelta != nil && p.GoodputDelta.CILow > 0, "goodput"
	}
	return below(p.LatencyDeltaMs) || below(p.CostDelta), "per-task latency or cost"
}

// decide sets every arm's verdict and reasons and fills s.Decision, in
// this order: failures nothing excuses (leaks, invalid answers, different
// work) reject; an interrupted arm is incomplete; a comparison the data
// cannot carry (baseline passing nothing, too few pairs, failures
// clustered in time) is inconclusive; the quality rule and the guardrails
// reject; what is left is accepted if it improves the objective, else
// no_gain.
func decide(s *Summary, opt Options) {
	g := opt.gate()
	d := Decision{Accepted: []string{}, Rejected: []string{}, NoGain: []string{}, Inconclusive: []string{}, Incomplete: []string{},
		Warnings: []string{}, WhatWouldChange: map[string]string{}}
	base := &s.Arms[0]
	base.Verdict = VerdictBaseline
	drift := map[string]bool{}
	for _, c := range s.Clusters {
		for _, a := range c.Arms {
			drift[a] = true
		}
		d.Warnings = append(d.Warnings, "failures clustered in time: "+c.String()+"; arms affected: "+strings.Join(c.Arms, ", ")+
			": an outage or drift of the backend, not evidence about an arm, so their verdicts are inconclusive")
	}
	var sentences []string
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		fails := hardFails(a, opt.Incomplete != "")
		if f := falseHitFail(a, g); f != "" {
			fails = append(fails, f)
		}
		switch differ, unknown, msg := ContractChange(base, a); {
		case differ && !opt.AllowContractChange:
			fails = append(fails, "ran different work: "+msg+"; a changed contract changes what counts as done (allow the contract change to compare anyway)")
			d.Warnings = append(d.Warnings, a.Name+": "+msg+": the comparison is of different work, so the gate rejects it")
		case differ:
			d.Warnings = append(d.Warnings, a.Name+": "+msg+": compared anyway because the contract change was allowed, but the two arms did different work")
		case unknown:
			d.Warnings = append(d.Warnings, a.Name+": "+msg)
		}
		var why []string // reasons for a verdict other than accept or reject
		verdict := ""
		switch {
		case len(fails) > 0:
			verdict = VerdictReject
		case opt.Incomplete != "":
			verdict = VerdictIncomplete
			why = append(why, "incomplete: "+opt.Incomplete)
		case a.Outcomes[records.OutcomeCancelled] > 0 || base.Outcomes[records.OutcomeCancelled] > 0:
			verdict = VerdictIncomplete
			why = append(why, fmt.Sprintf("incomplete: the run was interrupted (%s and %s cancelled in this arm and the baseline); only a complete run decides",
				words.Count(a.Outcomes[records.OutcomeCancelled], "request"), words.Count(base.Outcomes[records.OutcomeCancelled], "request")))
		case base.Pass == 0:
			verdict = VerdictInconclusive
			why = append(why, "inconclusive: the baseline passes nothing, so there is no quality to hold a candidate to")
		case a.Paired.Pairs < g.MinPairs:
			verdict = VerdictInconclusive
			why = append(why, fmt.Sprintf("inconclusive: %s, fewer than the %d a verdict needs", words.Count(a.Paired.Pairs, "matched pair"), g.MinPairs))
		case drift[a.Name] || drift[base.Name]:
			verdict = VerdictInconclusive
			why = append(why, "inconclusive: failures clustered in time fall on this comparison (see the warnings); re-run when the backend is steady")
		case errorRateGap(base, a) != "":
			gap := errorRateGap(base, a)
			verdict = VerdictInconclusive
			why = append(why, "inconclusive: "+gap+": a backend that failed unevenly between arms, not evidence about the stack; re-run, interleaved, when it is steady")
			d.Warnings = append(d.Warnings, gap)
		}
		if verdict == "" {
			if f := qualityFail(base, a, g); f != "" {
				fails = append(fails, f)
			}
			if a.OK == 0 {
				fails = append(fails, "no request succeeded")
			}
			fails = append(fails, guardrailFails(base, a, g)...)
			if len(fails) > 0 {
				verdict = VerdictReject
			}
		}
		switch verdict {
		case VerdictReject:
			a.Verdict = VerdictReject
			a.Reasons = append(a.Reasons, fails...)
			if r := notRescued(base, a); r != "" {
				a.Reasons = append(a.Reasons, r)
			}
			d.Rejected = append(d.Rejected, a.Name)
			sentences = append(sentences, a.Name+" rejected: "+fails[0]+".")
			d.WhatWouldChange[a.Name] = changeReject(base, a, g, !opt.AllowContractChange)
			if w := weakLoss(a); w != "" {
				d.Warnings = append(d.Warnings, w)
			}
			continue
		case VerdictIncomplete, VerdictInconclusive:
			a.Verdict = verdict
			a.Reasons = append(a.Reasons, why...)
			if verdict == VerdictIncomplete {
				d.Incomplete = append(d.Incomplete, a.Name)
				d.WhatWouldChange[a.Name] = "a complete run of " + a.Name + " and " + base.Name
			} else {
				d.Inconclusive = append(d.Inconclusive, a.Name)
				d.WhatWouldChange[a.Name] = "a comparison the data can carry: " + strings.TrimPrefix(why[0], "inconclusive: ")
			}
			sentences = append(sentences, a.Name+" "+verdict+": "+strings.TrimPrefix(strings.TrimPrefix(why[0], "incomplete: "), "inconclusive: ")+".")
			continue
		}
		a.Reasons = append(a.Reasons, passReason(base, a), latencyReason(base, a), costReason(base, a))
		if g.Objective == ObjectiveGoodput {
			a.Reasons = append(a.Reasons, goodputReason(a, g))
		}
		ap95, bp95 := figure.Pair(a.P95Ms, base.P95Ms, figure.Ms)
		acpp, bcpp := figure.CostPerPassPair(a.CostPerPass, base.CostPerPass)
		figures := fmt.Sprintf("passes %d of %d vs %d of %d for %s; p95 %s vs %s ms; cost per pass %s vs %s",
			a.Pass, a.N, base.Pass, base.N, base.Name, ap95, bp95, acpp, bcpp)
		if ok, what := improves(a, g); ok {
			a.Verdict = VerdictAccept
			d.Accepted = append(d.Accepted, a.Name)
			sentences = append(sentences, a.Name+" accepted: "+figures+".")
			d.WhatWouldChange[a.Name] = changeAccept(base, a, g)
		} else {
			a.Verdict = VerdictNoGain
			a.Reasons = append([]string{"no gain: passes the gate, but " + what + " does not improve with a 95% interval that excludes 0"}, a.Reasons...)
			d.NoGain = append(d.NoGain, a.Name)
			sentences = append(sentences, a.Name+" no gain: "+figures+".")
			d.WhatWouldChange[a.Name] = a.Name + " would be accepted with an improvement of " + what + " whose 95% interval excludes 0"
		}
	}
	if len(sentences) == 0 {
		d.Summary = "only one arm (" + base.Name + "): nothing to compare"
	} else {
		d.Summary = strings.Join(sentences, " ")
	}
	d.Warnings = append(tailWarnings(s.Arms), d.Warnings...)
	d.Warnings = append(d.Warnings, fewPairsWarnings(s.Arms)...)
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

// changeAccept says what would reject an accepted candidate.
func changeAccept(base, a *ArmSummary, g GateConfig) string {
	k := a.Pass - base.Pass + 1 + g.MaxLost
	verb := "rejects"
	if k > 1 {
		verb = "reject"
	}
	also := []string{"any leaking cache hit", "any invalid answer recorded ok"}
	if c := a.CacheStats; c != nil && c.FalseHitUpper95 != nil {
		also = append(also, "false hits whose 95% upper bound passes "+figure.Pct(g.FalseHitLimit())+" of semantic hits")
	}
	return fmt.Sprintf("%s %s %s; so would %s, or a run on different tasks",
		words.Count(k, "more failed task"), verb, a.Name, strings.Join(also, ", "))
}

// changeReject says what would let a rejected candidate through the gate.
func changeReject(base, a *ArmSummary, g GateConfig, contractBlocks bool) string {
	var parts []string
	if qualityFail(base, a, g) != "" {
		if k := base.Pass - a.Pass - g.MaxLost; k > 0 {
			parts = append(parts, words.Count(k, "more passing task")+" (level with the baseline)")
		} else {
			parts = append(parts, "no passing task lost")
		}
	}
	if len(guardrailFails(base, a, g)) > 0 {
		parts = append(parts, "figures within the guardrails")
	}
	if a.LeakCount() > 0 {
		parts = append(parts, "no leaking cache hits")
	}
	if a.SilentViolations > 0 {
		parts = append(parts, "no invalid answers recorded ok")
	}
	if falseHitFail(a, g) != "" {
		parts = append(parts, "a 95% upper bound on false hits per semantic hit at most "+figure.Pct(g.FalseHitLimit())+
			" (fewer false hits at a higher threshold, or more semantic hits to narrow the bound)")
	}
	if a.Paired != nil && len(a.Paired.Unmatched) > 0 {
		parts = append(parts, "a run on the same tasks as the baseline")
	}
	if differ, _, _ := ContractChange(base, a); differ && contractBlocks {
		parts = append(parts, "the baseline's contract (or the contract change allowed)")
	}
	return a.Name + " would pass the gate with " + words.And(parts)
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

// falseHitFail is the failure of a semantic cache whose false hits are not
// shown to stay under the gate's limit: its one-sided 95% upper bound on
// false hits per hit is above it. "" when the arm has no semantic hits.
func falseHitFail(a *ArmSummary, g GateConfig) string {
	c := a.CacheStats
	if c == nil || c.FalseHitUpper95 == nil || *c.FalseHitUpper95 <= g.FalseHitLimit() {
		return ""
	}
	return fmt.Sprintf("false hits: %d of %s served another task's answer wrongly; the 95%% upper bound on the rate, %s, is above the gate's %s",
		c.FalseHits, words.Count(c.SemanticHits, "semantic hit"), figure.Pct(*c.FalseHitUpper95), figure.Pct(g.FalseHitLimit()))
}
