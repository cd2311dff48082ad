package eval

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Decision is the verdict over every candidate: quality gate first, speed
// and cost second.
type Decision struct {
	Accepted []string `json:"accepted"`
	Rejected []string `json:"rejected"`
	Summary  string   `json:"summary"` // one sentence per candidate
	// Warnings say where the figures are weaker than they look: tail
	// percentiles that are the sample maximum, few pairs, an interrupted
	// run, a rejection that rests on a statistically weak loss.
	Warnings []string `json:"warnings"`
	// WhatWouldChange says, per candidate, what evidence would flip its
	// verdict.
	WhatWouldChange map[string]string `json:"what_would_change"`
}

// Gate returns why candidate fails the quality gate against baseline; none
// means it passes. candidate.Paired must hold its comparison with baseline.
// A candidate fails when it passes fewer tasks, serves any leaking cache
// hit, records any invalid answer as ok, or ran different tasks. Equal
// passes on different tasks pass the gate; Summarize lists them in the
// reasons.
func Gate(baseline, candidate *ArmSummary) []string {
	var fails []string
	p := candidate.Paired
	if candidate.Pass < baseline.Pass {
		counts := fmt.Sprintf("passes %d of %d vs %d of %d for %s", candidate.Pass, candidate.N, baseline.Pass, baseline.N, baseline.Name)
		if p != nil && len(p.Lost) > 0 {
			msg := fmt.Sprintf("loses %s: %s", countNoun(len(p.Lost), "passing task"), idList(p.Lost))
			if len(p.Gained) > 0 {
				msg += fmt.Sprintf(", gains %d: %s", len(p.Gained), idList(p.Gained))
			}
			fails = append(fails, msg+" ("+counts+")")
		} else {
			fails = append(fails, "passes fewer tasks than the baseline: "+counts)
		}
	}
	if n := candidate.LeakCount(); n > 0 {
		kinds := make([]string, 0, len(candidate.Leaks))
		for _, k := range sortedKeys(candidate.Leaks) {
			if candidate.Leaks[k] > 0 {
				kinds = append(kinds, fmt.Sprintf("%s %d", k, candidate.Leaks[k]))
			}
		}
		fails = append(fails, fmt.Sprintf("leaks: %s served from another scope (%s)", countNoun(n, "cache hit"), strings.Join(kinds, ", ")))
	}
	if candidate.SilentViolations > 0 {
		fails = append(fails, fmt.Sprintf("lets invalid answers through: %s recorded ok that break the contract", countNoun(candidate.SilentViolations, "answer")))
	}
	if p != nil && len(p.Unmatched) > 0 {
		fails = append(fails, fmt.Sprintf("ran different work: %s on one side only: %s", countNoun(len(p.Unmatched), "task"), idList(p.Unmatched)))
	}
	return fails
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

// decide sets every arm's verdict and reasons and fills s.Decision.
func decide(s *Summary, opt Options) {
	d := Decision{Accepted: []string{}, Rejected: []string{}, Warnings: []string{}, WhatWouldChange: map[string]string{}}
	base := &s.Arms[0]
	base.Verdict = VerdictBaseline
	var sentences []string
	for i := 1; i < len(s.Arms); i++ {
		a := &s.Arms[i]
		fails := Gate(base, a)
		switch differ, unknown, msg := ContractChange(base, a); {
		case differ && !opt.AllowContractChange:
			fails = append(fails, "ran different work: "+msg+"; a changed contract changes what counts as done (allow the contract change to compare anyway)")
			d.Warnings = append(d.Warnings, a.Name+": "+msg+": the comparison is of different work, so the gate rejects it")
		case differ:
			d.Warnings = append(d.Warnings, a.Name+": "+msg+": compared anyway because the contract change was allowed, but the two arms did different work")
		case unknown:
			d.Warnings = append(d.Warnings, a.Name+": "+msg)
		}
		if len(fails) > 0 {
			a.Verdict = VerdictReject
			a.Reasons = append(a.Reasons, fails...)
			if r := notRescued(base, a); r != "" {
				a.Reasons = append(a.Reasons, r)
			}
			d.Rejected = append(d.Rejected, a.Name)
			sentences = append(sentences, a.Name+" rejected: "+fails[0]+".")
			d.WhatWouldChange[a.Name] = changeReject(base, a, !opt.AllowContractChange)
			if w := weakLoss(a); w != "" {
				d.Warnings = append(d.Warnings, w)
			}
			continue
		}
		a.Verdict = VerdictAccept
		a.Reasons = append(a.Reasons, passReason(base, a), latencyReason(base, a), costReason(base, a))
		d.Accepted = append(d.Accepted, a.Name)
		ap95, bp95 := fmtPair(a.P95Ms, base.P95Ms, fmtMs)
		acpp, bcpp := fmtCostPerPassPair(a.CostPerPass, base.CostPerPass)
		sentences = append(sentences, fmt.Sprintf("%s accepted: passes %d of %d vs %d of %d for %s; p95 %s vs %s ms; cost per pass %s vs %s.",
			a.Name, a.Pass, a.N, base.Pass, base.N, base.Name, ap95, bp95, acpp, bcpp))
		d.WhatWouldChange[a.Name] = changeAccept(base, a)
	}
	if len(sentences) == 0 {
		d.Summary = "only one arm (" + base.Name + "): nothing to compare"
	} else {
		d.Summary = strings.Join(sentences, " ")
	}
	d.Warnings = append(tailWarnings(s.Arms), d.Warnings...)
	d.Warnings = append(d.Warnings, fewPairsWarnings(s.Arms)...)
	for i := range s.Arms {
		if c := s.Arms[i].Outcomes[OutcomeCancelled]; c > 0 {
			d.Warnings = append(d.Warnings, fmt.Sprintf("%s: %s cancelled: the run was interrupted, so its figures cover an incomplete pass",
				s.Arms[i].Name, countNoun(c, "request")))
		}
	}
	s.Decision = d
}

// passReason states how the candidate's passes compare with the baseline's.
func passReason(base, a *ArmSummary) string {
	p := a.Paired
	diff := ""
	if len(p.Lost) > 0 || len(p.Gained) > 0 {
		var parts []string
		if len(p.Lost) > 0 {
			parts = append(parts, "loses "+idList(p.Lost))
		}
		if len(p.Gained) > 0 {
			parts = append(parts, "gains "+idList(p.Gained))
		}
		diff = fmt.Sprintf(": %s (McNemar p = %s)", strings.Join(parts, ", "), fmtP(p.McNemarP))
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
	ap95, bp95 := fmtPair(a.P95Ms, base.P95Ms, fmtMs)
	p95 := fmt.Sprintf("p95 %s vs %s ms%s", ap95, bp95, relChange(a.P95Ms, base.P95Ms))
	d := a.Paired.LatencyDeltaMs
	if d == nil {
		return "latency not compared task by task (no matched tasks): " + p95
	}
	delta := fmt.Sprintf("per-task delta mean %s ms, 95%% CI %s to %s", fmtMs(d.Mean), fmtMs(d.CILow), fmtMs(d.CIHigh))
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
	acpp, bcpp := fmtCostPerPassPair(a.CostPerPass, base.CostPerPass)
	cpp := fmt.Sprintf("cost per pass %s vs %s", acpp, bcpp)
	if a.CostPerPass != nil && base.CostPerPass != nil {
		cpp += relChange(*a.CostPerPass, *base.CostPerPass)
	}
	d := a.Paired.CostDelta
	if d == nil {
		return "cost not compared task by task (no matched tasks): " + cpp
	}
	delta := fmt.Sprintf("per-task delta mean %s, 95%% CI %s to %s", fmtCost(d.Mean), fmtCost(d.CILow), fmtCost(d.CIHigh))
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
		ap95, bp95 := fmtPair(a.P95Ms, base.P95Ms, fmtMs)
		wins = append(wins, fmt.Sprintf("p95 %s vs %s ms", ap95, bp95))
	}
	if a.CostPerPass != nil && base.CostPerPass != nil && *a.CostPerPass < *base.CostPerPass {
		acpp, bcpp := fmtCostPerPassPair(a.CostPerPass, base.CostPerPass)
		wins = append(wins, fmt.Sprintf("cost per pass %s vs %s", acpp, bcpp))
	}
	if len(wins) == 0 {
		return ""
	}
	return "not rescued by speed or cost (" + strings.Join(wins, ", ") + "): the quality gate comes first"
}

// changeAccept says what would reject an accepted candidate.
func changeAccept(base, a *ArmSummary) string {
	k := a.Pass - base.Pass + 1
	verb := "rejects"
	if k > 1 {
		verb = "reject"
	}
	return fmt.Sprintf("%s %s %s; so would any leaking cache hit, any invalid answer recorded ok, or a run on different tasks",
		countNoun(k, "more failed task"), verb, a.Name)
}

// changeReject says what would let a rejected candidate through the gate.
func changeReject(base, a *ArmSummary, contractBlocks bool) string {
	var parts []string
	if k := base.Pass - a.Pass; k > 0 {
		parts = append(parts, countNoun(k, "more passing task")+" (level with the baseline)")
	}
	if a.LeakCount() > 0 {
		parts = append(parts, "no leaking cache hits")
	}
	if a.SilentViolations > 0 {
		parts = append(parts, "no invalid answers recorded ok")
	}
	if a.Paired != nil && len(a.Paired.Unmatched) > 0 {
		parts = append(parts, "a run on the same tasks as the baseline")
	}
	if differ, _, _ := ContractChange(base, a); differ && contractBlocks {
		parts = append(parts, "the baseline's contract (or the contract change allowed)")
	}
	return a.Name + " would pass the gate with " + joinAnd(parts)
}

// weakLoss warns when a rejection for lost tasks is not statistically clear.
func weakLoss(a *ArmSummary) string {
	p := a.Paired
	if p == nil || len(p.Lost) == 0 || p.McNemarP < pThreshold {
		return ""
	}
	return fmt.Sprintf("%s: losing %s and gaining %d is not statistically clear (McNemar p = %s); the gate rejects any loss, and repeats would show whether it is noise",
		a.Name, countNoun(len(p.Lost), "task"), len(p.Gained), fmtP(p.McNemarP))
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
			strings.Join(names[n], ", "), countNoun(n, "pair")))
	}
	return out
}

// idList writes ids, shortening long lists.
func idList(ids []string) string {
	const show = 10
	if len(ids) <= show {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:show], ", ") + fmt.Sprintf(" and %d more", len(ids)-show)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// relChange writes " (-44%)" for v against ref, from the unrounded
// figures: whole percents, or one significant digit when a real change is
// under half a percent (" (+0.02%)"); empty when ref is 0.
func relChange(v, ref float64) string {
	if ref == 0 {
		return ""
	}
	pct := (v/ref - 1) * 100
	s := fmt.Sprintf("%+.0f", pct)
	if (s == "+0" || s == "-0") && pct != 0 {
		s = fmtSigFixed(pct, 1)
		if pct > 0 {
			s = "+" + s
		}
	}
	if s == "-0" {
		s = "+0"
	}
	return " (" + s + "%)"
}
