package analysis

import (
	"fmt"
	"slices"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/quantile"
	"github.com/crab-testbed/crab/internal/words"
)

// In switchback order the first stretch of every block (its burn-in) may
// still find the backend holding the previous block's requests, another
// arm's: a carry-over of load that is not the arm's own. Burn-in requests
// count wherever load cannot have moved the figure — quality, cost,
// failures and every count — and are left out of the latency figures, the
// arm's and the paired comparison's, which would otherwise charge one arm
// part of the queue another left behind. Every arm's copy of a block has
// the same offsets, so the same tasks are burn-in on every arm and the
// pairs stay matched.

// leftOut is what the latency figures leave out beside burn-in requests:
// those that waited through a stall of the backend (see stalledRequests),
// and with each of them every arm's copy of its task, so that every arm's
// latency figures cover the same tasks. (carry is kept for callers that
// leave carry-over out too; the summary counts carry-over and tests it for
// interference instead.)
type leftOut struct {
	carry, stalled map[*records.Rec]bool
	tasks          map[taskRepeat]bool
}

// taskRepeat is a task in one repeat: one copy per arm.
type taskRepeat struct {
	task   records.Sym
	repeat int
}

func newLeftOut(t *records.Symbols, carry, stalled map[*records.Rec]bool) leftOut {
	l := leftOut{carry: carry, stalled: stalled, tasks: map[taskRepeat]bool{}}
	for _, m := range []map[*records.Rec]bool{carry, stalled} {
		for r := range m {
			l.tasks[taskRepeat{r.TaskID, t.Attrs(r).Repeat}] = true
		}
	}
	return l
}

// out reports whether r is left out of the latency figures.
func (l leftOut) out(t *records.Symbols, r *records.Rec) bool {
	return t.Attrs(r).BurnIn || l.tasks[taskRepeat{r.TaskID, t.Attrs(r).Repeat}]
}

// compared is recs without those left out of the latency figures; recs
// itself when none is.
func (l leftOut) compared(t *records.Symbols, recs []*records.Rec) []*records.Rec {
	n := 0
	for _, r := range recs {
		if l.out(t, r) {
			n++
		}
	}
	if n == 0 {
		return recs
	}
	out := make([]*records.Rec, 0, len(recs)-n)
	for _, r := range recs {
		if !l.out(t, r) {
			out = append(out, r)
		}
	}
	return out
}

// burnInLatency sets an arm's latency figures (percentiles, means, TTFT,
// the groups' latency and the latency intervals) from its requests in the
// latency comparison, when some were left out, and counts those in
// a.BurnIn and a.Stalled (and a.CarryOver where left carries it).
func burnInLatency(t *records.Symbols, a *ArmSummary, recs []*records.Rec, seed int64, large map[string]bool, left leftOut) {
	c := left.compared(t, recs)
	if len(c) == len(recs) || len(c) == 0 {
		return
	}
	for _, r := range recs {
		switch {
		case t.Attrs(r).BurnIn:
			a.BurnIn++
		case left.stalled[r]:
			a.Stalled++
		case left.carry[r]:
			a.CarryOver++
		}
	}
	sub := summarizeArm(t, a.Name, c, 0, large)
	a.P50Ms, a.P90Ms, a.P95Ms, a.P99Ms, a.MaxMs, a.MeanMs, a.MinMs = sub.P50Ms, sub.P90Ms, sub.P95Ms, sub.P99Ms, sub.MaxMs, sub.MeanMs, sub.MinMs
	a.OKP50Ms, a.OKP95Ms, a.OKMeanMs = sub.OKP50Ms, sub.OKP95Ms, sub.OKMeanMs
	a.TTFTP50Ms, a.TTFTP95Ms = sub.TTFTP50Ms, sub.TTFTP95Ms
	for g, gs := range a.Groups {
		if ss, ok := sub.Groups[g]; ok {
			gs.P50Ms, gs.P95Ms = ss.P50Ms, ss.P95Ms
			a.Groups[g] = gs
		}
	}
	if a.Uncertainty != nil {
		if u := uncertainty(t, c, seed); u != nil {
			a.Uncertainty.P50CI, a.Uncertainty.P95CI, a.Uncertainty.Repeats = u.P50CI, u.P95CI, u.Repeats
		}
	}
}

// comparePairs is comparePaired with the latency figures (delta, guardrail
// ratios, goodput, which rests on latency) taken over the pairs neither of
// whose requests is left out (burn-in, carry-over); quality and cost stay
// over every pair.
func comparePairs(t *records.Symbols, baseline, candidate []*records.Rec, opt PairOptions, left leftOut) Paired {
	p := comparePaired(t, baseline, candidate, opt)
	p.switchback = len(baseline) > 0 && len(candidate) > 0 && allBlocked(baseline) && allBlocked(candidate)
	b, c := left.compared(t, baseline), left.compared(t, candidate)
	if len(b) == len(baseline) && len(c) == len(candidate) {
		return p
	}
	l := comparePaired(t, b, c, opt)
	p.LatencyDeltaMs, p.P95Ratio, p.TTFTP95Ratio, p.GoodputDelta = l.LatencyDeltaMs, l.P95Ratio, l.TTFTP95Ratio, l.GoodputDelta
	p.LatencyLeftOut = p.Pairs - l.Pairs
	return p
}

// allBlocked reports whether every request carries its switchback block.
func allBlocked(recs []*records.Rec) bool {
	for _, r := range recs {
		if r.Block == 0 {
			return false
		}
	}
	return true
}

// switchbackOutside is the verdict of a switchback run on the pairs outside
// the windows where the backend stalled or failed, where it differs from
// the whole run's. A task's copies are sent in different blocks, so such a
// window hits them unequally by design, not because one arm is worse:
// the windows are left out (a window only counts where the baseline was
// hit too or did not send, see excusedWindows) and the verdict is the one
// outside them, said so.
func switchbackOutside(o judgement, a *ArmSummary) judgement {
	note := fmt.Sprintf("judged on the %s outside the windows where the backend stalled or failed (see the warnings): in switchback order a task's copies are sent in different blocks, so such a window hits the arms unequally",
		words.Count(a.Outside.Pairs, "pair"))
	switch o.verdict {
	case VerdictReject:
		o.fails = append(o.fails, note)
	default:
		o.why = append(o.why, note)
	}
	return o
}

// failingCore is where a failure cluster is judged for whether the
// baseline was hit too: the whole window, or, in switchback order (the
// baseline's requests carry their block), the stretch from its first
// failed send to its last. One arm sends at a time there, so the window's
// edges hold blocks sent before or after the backend failed, whichever
// arm played them; inside the core, a baseline hit as the others were
// was sent while the backend was failing.
func failingCore(c Cluster, base []*records.Rec) window {
	return core(window{c.startNs, c.endNs}, window{c.firstNs, c.lastNs + 1}, base)
}

// stalledCore is failingCore for a stall: in switchback order, the stretch
// from the first send whose latency stalled to the last.
func stalledCore(st Stall, base []*records.Rec) window {
	return core(window{st.startNs, st.endNs}, window{st.firstNs, st.lastNs + 1}, base)
}

func core(whole, core window, base []*records.Rec) window {
	if len(base) == 0 || !allBlocked(base) || core.start == 0 {
		return whole
	}
	return core
}

// Backend stalls in switchback order. A stall of the backend holds every
// request in flight until it ends, whichever arm sent it; in a switchback
// it lands on the block (or two) that was playing, not on every arm's copy
// of the same tasks, so left in it would move one arm's tail. The
// signature of a stall is a stretch in which the backend answered nothing
// while requests waited for it: a load the backend is merely slow to serve
// keeps answering at its capacity, so a candidate that overloads it is
// never taken for a stall. Every request that waited through such a
// stretch, or was sent before the backlog it left had cleared, is left out
// of the latency figures like burn-in.

// Stall gap thresholds: the backend answered nothing for at least
// stallGapFactor times the median latency and stallGapMinMs, while at
// least stallGapWaiting requests waited through it.
const (
	stallGapFactor  = 3
	stallGapMinMs   = 250
	stallGapWaiting = 2
)

// stalledRequests is, in switchback order, the requests of every arm that
// waited through a stall of their backend (see above); nil when none did.
func stalledRequests(t *records.Symbols, byArm map[string][]*records.Rec, arms []string, d *Design) map[*records.Rec]bool {
	type fl struct {
		r          *records.Rec
		start, end int64
	}
	byBackend := map[string][]fl{}
	var lat []float64
	for _, name := range arms {
		for _, r := range byArm[name] {
			if r.Block == 0 || !sent(t, r) {
				continue
			}
			b := d.backend(t.Str(t.Attrs(r).Model))
			byBackend[b] = append(byBackend[b], fl{r, r.At, r.At + int64(r.E2EMs*1e6)})
			lat = append(lat, r.E2EMs)
		}
	}
	if len(lat) == 0 {
		return nil
	}
	slices.Sort(lat)
	minGap := int64(max(stallGapFactor*quantile.NearestRank(lat, 50), stallGapMinMs) * 1e6)
	var out map[*records.Rec]bool
	for _, fs := range byBackend {
		ends := make([]int64, len(fs))
		for i, f := range fs {
			ends[i] = f.end
		}
		slices.Sort(ends)
		starts := make([]int64, len(fs))
		for i, f := range fs {
			starts[i] = f.start
		}
		slices.Sort(starts)
		for i := 0; i+1 < len(ends); i++ {
			from, to := ends[i], ends[i+1]
			if to-from < minGap {
				continue
			}
			// Nothing was answered between from and to: the requests sent
			// at least minGap before to and not answered by from waited
			// that long for the backend. An idle stretch, where the next
			// requests came late, has none.
			sentBy, _ := slices.BinarySearch(starts, to-minGap+1)
			if sentBy-(i+1) < stallGapWaiting {
				continue
			}
			// The stall's backlog clears when the last request that
			// waited through it is answered.
			clear := to
			for _, f := range fs {
				if f.start < to && f.end > from {
					clear = max(clear, f.end)
				}
			}
			for _, f := range fs {
				if f.start < clear && f.end > from {
					if out == nil {
						out = map[*records.Rec]bool{}
					}
					out[f.r] = true
				}
			}
		}
	}
	return out
}

// twinBasis is what the A/A control's tests read: in switchback order,
// when the run had windows where the backend stalled or failed, the pairs
// outside them (a window hits the twin's and the baseline's copies of a
// task unequally by design); otherwise the whole run.
func twinBasis(base, twin *ArmSummary) (*ArmSummary, *ArmSummary) {
	if twin.Outside == nil || !twin.Outside.switchback {
		return base, twin
	}
	return outsideArms(base, twin)
}
