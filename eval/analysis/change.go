package analysis

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/internal/words"
)

// What would change a verdict is found by running the gate again on edited
// outcomes, never by arithmetic on totals: a stated edit flips the verdict
// and one less does not, under any rule, loss allowance, guardrail and
// objective. An edit turns k of the candidate's passing tasks into failures
// (failMore) or k of its failing tasks into passes (passMore); its costs
// and latencies stay as they are, so cost per pass follows the new count.

// editedPass is a copy of a whose Paired counts are rewritten by edit,
// with tasks as its per-task outcomes; the copy's slices are its own.
func editedPass(a *ArmSummary, pass int, lost, gained int, tasks []TaskOutcomes) *ArmSummary {
	c := *a
	p := *a.Paired
	p.Lost = resized(a.Paired.Lost, lost)
	p.Gained = resized(a.Paired.Gained, gained)
	p.candPass += pass - a.Pass
	p.tasks = tasks
	c.Paired = &p
	c.Pass = pass
	c.CostPerPass = nil
	if pass > 0 {
		v := c.Cost / float64(pass)
		c.CostPerPass = &v
	}
	return &c
}

// resized is ids cut or padded (with placeholders) to n.
func resized(ids []string, n int) []string {
	if n <= len(ids) {
		return slices.Clone(ids[:n])
	}
	out := slices.Clone(ids)
	for len(out) < n {
		out = append(out, "(edited)")
	}
	return out
}

// moved is a copy of tasks with k pairs moved from one cell to another
// (from and to pick the cells of a task), taken in task order.
func moved(tasks []TaskOutcomes, k int, from, to func(*TaskOutcomes) *int) []TaskOutcomes {
	out := slices.Clone(tasks)
	for i := range out {
		n := min(k, *from(&out[i]))
		*from(&out[i]) -= n
		*to(&out[i]) += n
		k -= n
	}
	return out
}

// The cells of a task's pairs, for moved.
func cellBoth(o *TaskOutcomes) *int     { return &o.Both }
func cellBaseOnly(o *TaskOutcomes) *int { return &o.BaseOnly }
func cellCandOnly(o *TaskOutcomes) *int { return &o.CandOnly }
func cellNeither(o *TaskOutcomes) *int  { return &o.Neither }

// failMore is a with k more of its passing tasks failing: first tasks the
// baseline passes too (a lost task more each), then tasks only it passes
// (a gain fewer each). ok reports whether it has k passing tasks to fail.
func failMore(a *ArmSummary, k int) (*ArmSummary, bool) {
	p := a.Paired
	both := p.candPass - len(p.Gained)
	if k > a.Pass {
		return nil, false
	}
	fromBoth := min(k, max(both, 0))
	rest := k - fromBoth
	tasks := moved(moved(p.tasks, fromBoth, cellBoth, cellBaseOnly), rest, cellCandOnly, cellNeither)
	return editedPass(a, a.Pass-k, len(p.Lost)+fromBoth, max(len(p.Gained)-rest, 0), tasks), true
}

// passMore is a with k more of its failing tasks passing: first tasks it
// lost (a lost task fewer each), then tasks neither side passes (a gain
// more each), then tasks the baseline did not run.
func passMore(a *ArmSummary, k int) (*ArmSummary, bool) {
	p := a.Paired
	if k > a.N-a.Pass {
		return nil, false
	}
	fromLost := min(k, len(p.Lost))
	tasks := moved(moved(p.tasks, fromLost, cellBaseOnly, cellBoth), k-fromLost, cellNeither, cellCandOnly)
	return editedPass(a, a.Pass+k, len(p.Lost)-fromLost, len(p.Gained)+k-fromLost, tasks), true
}

// smallest is the least k in [1, n] for which flips(k) holds, assuming
// flips is monotone in k; 0 when none does.
func smallest(n int, flips func(k int) bool) int {
	k := sort.Search(n, func(i int) bool { return flips(i + 1) }) + 1
	if k > n {
		return 0
	}
	return k
}

// alsoRejects names what else would reject a candidate that passes the
// gate.
func alsoRejects(a *ArmSummary, g GateConfig) string {
	also := []string{"any leaking cache hit", "any invalid answer recorded ok"}
	if c := a.CacheStats; c != nil && c.SimilarityFalseHitUpper95 != nil {
		also = append(also, "false hits above "+figure.Pct(g.FalseHitLimit())+" of similarity hits, with a 95% upper bound above it too")
	}
	return strings.Join(also, ", ") + ", or a run on different tasks"
}

// changeToReject says how many more failed tasks reject a candidate the
// gate lets through (accepted or no gain), found by re-running the gate.
func changeToReject(base, a *ArmSummary, in gateInput) string {
	in.sizing = false
	k := smallest(a.Pass, func(k int) bool {
		e, ok := failMore(a, k)
		return ok && judge(base, e, in).verdict == VerdictReject
	})
	if k == 0 {
		return fmt.Sprintf("no number of failed tasks alone rejects %s; %s would", a.Name, alsoRejects(a, in.g))
	}
	verb := "rejects"
	if k > 1 {
		verb = "reject"
	}
	return fmt.Sprintf("%s %s %s; so would %s", words.Count(k, "more failed task"), verb, a.Name, alsoRejects(a, in.g))
}

// changeReject says what would let a rejected candidate through the gate:
// the failures no number of passing tasks mends, and the fewest more
// passing tasks that, with those mended, the gate no longer rejects.
func changeReject(base, a *ArmSummary, in gateInput) string {
	in.sizing = false
	g := in.g
	var parts []string
	mended := *a // the failures passes cannot mend, assumed mended
	if a.LeakCount() > 0 {
		parts = append(parts, "no leaking cache hits")
		mended.CacheStats = mendedCache(a.CacheStats)
	}
	if a.SilentViolations > 0 {
		parts = append(parts, "no invalid answers recorded ok")
		mended.SilentViolations = 0
	}
	if falseHitFail(a, g) != "" {
		parts = append(parts, "false hits per similarity hit at most "+figure.Pct(g.FalseHitLimit())+
			" (fewer false hits at a higher threshold, or more similarity hits to narrow the bound)")
		if mended.CacheStats == a.CacheStats {
			mended.CacheStats = mendedCache(a.CacheStats)
		}
		mended.CacheStats.SimilarityFalseHitUpper95 = nil
	}
	if a.Paired != nil && len(a.Paired.Unmatched) > 0 {
		parts = append(parts, "a run on the same tasks as the baseline")
		p := *a.Paired
		p.Unmatched = nil
		mended.Paired = &p
	}
	if differ, _, _ := ContractChange(base, a); differ && !in.allowContractChange {
		parts = append(parts, "the baseline's contract (or the contract change allowed)")
		mended.Contracts = base.Contracts
	}
	rails := func(c *ArmSummary) bool { r, _ := guardrailFails(base, c, g); return len(r) > 0 }
	if a.OK == 0 {
		parts = append(parts, "requests that succeed")
		mended.OK = a.N
	}
	// The latency guardrails do not move with passes: assume them met, and
	// say so, when they are broken.
	if latencyRailBroken(base, a, g) {
		parts = append(parts, "p95 and TTFT p95 within the guardrails")
		mended.P95Ms, mended.TTFTP95Ms = base.P95Ms, base.TTFTP95Ms
		if p := mended.Paired; p != nil {
			c := *p
			c.P95Ratio, c.TTFTP95Ratio = nil, nil
			mended.Paired = &c
		}
	}
	if failureFail(base, a, g) != "" {
		parts = append(parts, "no more errors and timeouts than the baseline beyond chance")
		p := *mended.Paired
		p.failCandOnly = p.failBaseOnly
		mended.Paired = &p
	}
	if f, _ := qualityFail(base, &mended, in); f != "" || rails(&mended) {
		k := smallest(a.N-a.Pass, func(k int) bool {
			e, ok := passMore(&mended, k)
			return ok && judge(base, e, in).verdict != VerdictReject
		})
		if k > 0 {
			parts = append([]string{words.Count(k, "more passing task")}, parts...)
		} else {
			parts = append([]string{"more passing tasks than it has requests"}, parts...)
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "figures within the guardrails")
	}
	return a.Name + " would pass the gate with " + words.And(parts)
}

// mendedCache is a copy of c without leaks.
func mendedCache(c *CacheStats) *CacheStats {
	m := *c
	m.Leaks = map[string]int{}
	return &m
}

// latencyRailBroken reports whether a latency guardrail (p95, TTFT p95)
// rejects the candidate: no change of passes mends those.
func latencyRailBroken(base, a *ArmSummary, g GateConfig) bool {
	nc := g
	nc.CostPerPassRegressPct = nil
	r, _ := guardrailFails(base, a, nc)
	return len(r) > 0
}
