package analysis

import (
	"fmt"
	"github.com/crab-testbed/crab/internal/quantile"
	"math"
	"slices"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
)

// Cluster is a window of a run in which errors and timeouts were far more
// frequent than over the whole run: an outage or a drift of the backend,
// not a property of an arm. Times are milliseconds from the run's first
// intended send time.
type Cluster struct {
	StartMs  float64  `json:"start_ms"`
	EndMs    float64  `json:"end_ms"`
	Failures int      `json:"failures"` // tasks with an error or timeout on some arm in the window
	Requests int      `json:"requests"` // tasks sent in the window
	Expected float64  `json:"expected"` // failures expected at the run's failure rate
	P        float64  `json:"p"`        // Bonferroni-corrected binomial tail probability
	Arms     []string `json:"arms"`     // arms with failures in the window

	// startNs and endNs are the window in Unix nanoseconds, widened by a
	// scan bin on either side: the pairs outside them are surely outside.
	startNs, endNs int64
	// firstNs and lastNs are the first and last failed send in the
	// window: its core, where the backend was failing.
	firstNs, lastNs int64
}

// Clustering thresholds: the run is cut into clusterBins windows; a window
// is flagged when its failures are this improbable at the run's failure
// rate (one-sided binomial tail, times the number of windows) and at least
// clusterMinFailures.
const (
	clusterBins        = 20
	clusterAlpha       = 1e-3
	clusterMinFailures = 5
)

// failureClusters finds windows of clustered errors and timeouts among the
// timed records of every arm. Adjacent flagged windows merge into one. The
// unit counted is a task sent in a window, not a request: in paired order
// every arm sends the same task at once, and a task that fails on every
// arm (a fault of the task, not of the time) must not pass for a burst of
// independent failures.
func failureClusters(t *records.Symbols, byArm map[string][]*records.Rec, arms []string) []Cluster {
	lo, width, ok := timeline(t, byArm, arms)
	if !ok {
		return nil
	}
	type bin struct {
		n, f        int
		arms        map[string]bool
		first, last int64 // first and last failed send
	}
	// Each task (in one repeat) keeps two sets of windows as bits: those
	// it was sent in, and those where it failed on some arm. One entry a
	// task, not one a task and window: on millions of requests the tasks
	// are the largest thing counted here.
	tasks := newTaskBins(t, byArm, arms)
	bins := make([]bin, clusterBins)
	for _, name := range arms {
		for _, r := range byArm[name] {
			if !t.Attrs(r).Timed {
				continue
			}
			i := min(int(float64(r.At-lo)/width), clusterBins-1)
			b := &bins[i]
			fail := isFailure(t.Str(t.Attrs(r).Outcome))
			tasks.mark(r.TaskID, t.Attrs(r).Repeat, i, fail)
			if fail {
				if b.arms == nil {
					b.arms = map[string]bool{}
				}
				b.arms[name] = true
				if b.first == 0 || r.At < b.first {
					b.first = r.At
				}
				b.last = max(b.last, r.At)
			}
		}
	}
	total, failed := 0, 0
	tasks.each(func(sent, fail uint32) {
		for i := range bins {
			if sent&(1<<i) != 0 {
				bins[i].n++
				if fail&(1<<i) != 0 {
					bins[i].f++
				}
			}
		}
	})
	for i := range bins {
		total += bins[i].n
		failed += bins[i].f
	}
	if failed < clusterMinFailures {
		return nil
	}
	rate := float64(failed) / float64(total)
	var out []Cluster
	open := false
	for i, b := range bins {
		p := math.Min(1, binomialUpperTail(b.n, b.f, rate)*clusterBins)
		if b.f < clusterMinFailures || p >= clusterAlpha {
			open = false
			continue
		}
		if !open {
			out = append(out, Cluster{StartMs: float64(i) * width / 1e6, P: p, startNs: lo + int64(float64(i-1)*width), firstNs: b.first})
			open = true
		}
		c := &out[len(out)-1]
		c.lastNs = b.last
		c.EndMs = float64(i+1) * width / 1e6
		c.endNs = lo + int64(float64(i+2)*width)
		c.Failures += b.f
		c.Requests += b.n
		c.Expected += rate * float64(b.n)
		c.P = math.Max(c.P, p)
		for a := range b.arms {
			if !slices.Contains(c.Arms, a) {
				c.Arms = append(c.Arms, a)
			}
		}
	}
	for i := range out {
		slices.Sort(out[i].Arms)
	}
	return out
}

// taskBins is, for every task in every repeat, the windows it was sent
// in and those where it failed (bit i for window i, so clusterBins stays
// at most 32): in a table indexed
// by task and repeat when those are few beside the records, in a map
// otherwise.
type taskBins struct {
	repeats int
	dense   [][2]uint32 // [sent, failed] at task*repeats+repeat
	sparse  map[taskRepeat][2]uint32
}

func newTaskBins(t *records.Symbols, byArm map[string][]*records.Rec, arms []string) *taskBins {
	top, n := 0, 0
	for _, name := range arms {
		for _, r := range byArm[name] {
			top = max(top, t.Attrs(r).Repeat)
			n++
		}
	}
	tb := &taskBins{repeats: top + 1}
	if tb.repeats <= n && t.Len() <= n/tb.repeats { // 8 bytes a record at most
		tb.dense = make([][2]uint32, t.Len()*tb.repeats)
	} else {
		tb.sparse = map[taskRepeat][2]uint32{}
	}
	return tb
}

func (tb *taskBins) mark(task records.Sym, repeat, bin int, fail bool) {
	var e *[2]uint32
	var v [2]uint32
	if tb.dense != nil {
		e = &tb.dense[int(task)*tb.repeats+repeat]
	} else {
		v = tb.sparse[taskRepeat{task, repeat}]
		e = &v
	}
	e[0] |= 1 << bin
	if fail {
		e[1] |= 1 << bin
	}
	if tb.dense == nil {
		tb.sparse[taskRepeat{task, repeat}] = v
	}
}

// each calls f on every task's windows.
func (tb *taskBins) each(f func(sent, fail uint32)) {
	for _, e := range tb.dense {
		if e[0] != 0 {
			f(e[0], e[1])
		}
	}
	for _, e := range tb.sparse {
		f(e[0], e[1])
	}
}

func isFailure(outcome string) bool {
	return outcome == records.OutcomeError || outcome == records.OutcomeTimeout
}

// binomialUpperTail is P(X >= k) for X ~ Binomial(n, p).
func binomialUpperTail(n, k int, p float64) float64 {
	if k <= 0 {
		return 1
	}
	if k > n || p <= 0 {
		return 0
	}
	if p >= 1 {
		return 1
	}
	lnN, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for j := k; j <= n; j++ {
		a, _ := math.Lgamma(float64(j + 1))
		b, _ := math.Lgamma(float64(n - j + 1))
		term := math.Exp(lnN - a - b + float64(j)*math.Log(p) + float64(n-j)*math.Log1p(-p))
		sum += term
		if term < sum*1e-17 {
			break // the terms only shrink from here: the tail has converged
		}
	}
	return math.Min(1, sum)
}

// String describes the window for a warning.
func (c Cluster) String() string {
	return fmt.Sprintf("%d tasks with errors or timeouts among %d sent between %s s and %s s of the run (%s expected at the run's failure rate, p = %s)",
		c.Failures, c.Requests, figure.Sig(c.StartMs/1000, 3), figure.Sig(c.EndMs/1000, 3), figure.Sig(c.Expected, 2), figure.P(c.P))
}

// errorRateAlpha is how improbable a difference in error rate between a
// candidate and the baseline must be, under equal rates, to be called
// beyond chance.
const errorRateAlpha = 1e-3

// errorRateGap compares the share of errors and timeouts of a candidate
// with the baseline's by the exact conditional test: given the failures of
// both, the candidate's are Binomial(total, its share of the requests)
// under equal rates. It returns a description and the two-sided p-value
// when the difference is beyond chance, else "".
func errorRateGap(base, a *ArmSummary) string {
	fb, fa := base.Outcomes[records.OutcomeError]+base.Outcomes[records.OutcomeTimeout], a.Outcomes[records.OutcomeError]+a.Outcomes[records.OutcomeTimeout]
	nb, na := base.N-base.Cancelled, a.N-a.Cancelled
	total := fa + fb
	if total < clusterMinFailures || na == 0 || nb == 0 {
		return ""
	}
	share := float64(na) / float64(na+nb)
	upper := binomialUpperTail(total, fa, share)
	lower := 1 - binomialUpperTail(total, fa+1, share)
	p := math.Min(1, 2*math.Min(upper, lower))
	if p >= errorRateAlpha {
		return ""
	}
	return fmt.Sprintf("%s's errors and timeouts (%d of %d) differ from %s's (%d of %d) beyond chance (p = %s)",
		a.Name, fa, na, base.Name, fb, nb, figure.P(p))
}

// Stall is a window of the run in which the latency of every arm sending
// in it rose far above the run's usual level: a backend that stalled or
// paused. Times are milliseconds from the run's first intended send time.
type Stall struct {
	StartMs  float64 `json:"start_ms"`
	EndMs    float64 `json:"end_ms"`
	Requests int     `json:"requests"`
	P50Ms    float64 `json:"p50_ms"`     // median latency in the window
	RunP50Ms float64 `json:"run_p50_ms"` // median latency over the run

	// startNs and endNs are the window in Unix nanoseconds, widened by a
	// scan bin on either side: the pairs outside them are surely outside.
	startNs, endNs int64
	// firstNs and lastNs are the first and last send in the window whose
	// latency was stalled (at least the flagged median): its core.
	firstNs, lastNs int64
}

// String describes the window for a warning.
func (w Stall) String() string {
	return fmt.Sprintf("median latency %s ms among %d requests between %s s and %s s of the run, against %s ms over the run",
		figure.Ms(w.P50Ms), w.Requests, figure.Sig(w.StartMs/1000, 3), figure.Sig(w.EndMs/1000, 3), figure.Ms(w.RunP50Ms))
}

// Stall thresholds: a window (one of clusterBins) is a stall when its
// median latency is at least stallFactor times the run's and at least
// stallMinMs above it, over at least clusterMinFailures requests.
const (
	stallFactor = 3
	stallMinMs  = 50
)

// latencyStalls finds windows of stalled latency among the timed records
// of every arm. Adjacent flagged windows merge into one.
func latencyStalls(t *records.Symbols, byArm map[string][]*records.Rec, arms []string) []Stall {
	lo, width, ok := timeline(t, byArm, arms)
	if !ok {
		return nil
	}
	// One buffer, of the exact size: every latency sorted for the run's
	// median, then each window's latencies in a stretch of it.
	var perBin [clusterBins]int
	for _, name := range arms {
		for _, r := range byArm[name] {
			if t.Attrs(r).Timed {
				perBin[min(int(float64(r.At-lo)/width), clusterBins-1)]++
			}
		}
	}
	total := 0
	for _, n := range perBin {
		total += n
	}
	if total < clusterBins*clusterMinFailures {
		return nil
	}
	all := make([]float64, 0, total)
	for _, name := range arms {
		for _, r := range byArm[name] {
			if t.Attrs(r).Timed {
				all = append(all, r.E2EMs)
			}
		}
	}
	slices.Sort(all)
	runP50 := quantile.NearestRank(all, 50)
	bins := make([][]float64, clusterBins)
	for i, off := 0, 0; i < clusterBins; i++ {
		bins[i] = all[off : off : off+perBin[i]]
		off += perBin[i]
	}
	for _, name := range arms {
		for _, r := range byArm[name] {
			if t.Attrs(r).Timed {
				i := min(int(float64(r.At-lo)/width), clusterBins-1)
				bins[i] = append(bins[i], r.E2EMs)
			}
		}
	}
	// The core of a flagged window: its sends whose latency reached the
	// stall's threshold.
	core := func(w *Stall, i int, threshold float64) {
		for _, name := range arms {
			for _, r := range byArm[name] {
				if !t.Attrs(r).Timed || min(int(float64(r.At-lo)/width), clusterBins-1) != i || r.E2EMs < threshold {
					continue
				}
				if w.firstNs == 0 || r.At < w.firstNs {
					w.firstNs = r.At
				}
				w.lastNs = max(w.lastNs, r.At)
			}
		}
	}
	var out []Stall
	open := false
	for i, b := range bins {
		if len(b) < clusterMinFailures {
			open = false
			continue
		}
		slices.Sort(b)
		p50 := quantile.NearestRank(b, 50)
		if p50 < stallFactor*runP50 || p50-runP50 < stallMinMs {
			open = false
			continue
		}
		if !open {
			out = append(out, Stall{StartMs: float64(i) * width / 1e6, RunP50Ms: runP50, startNs: lo + int64(float64(i-1)*width)})
			open = true
		}
		w := &out[len(out)-1]
		w.EndMs = float64(i+1) * width / 1e6
		w.endNs = lo + int64(float64(i+2)*width)
		w.Requests += len(b)
		w.P50Ms = max(w.P50Ms, p50)
		core(w, i, max(stallFactor*runP50, runP50+stallMinMs))
	}
	return out
}

// window is a stretch of the run in Unix nanoseconds, [start, end).
type window struct{ start, end int64 }

// outsideWindows returns both sides without the pairs that either side
// sent inside one of the windows, so that a comparison can be checked
// on the stretches of the run where the backend was steady.
func outsideWindows(t *records.Symbols, base, cand []*records.Rec, ws []window) ([]*records.Rec, []*records.Rec) {
	type key struct {
		task   records.Sym
		repeat int
	}
	inside := map[key]bool{}
	for _, side := range [][]*records.Rec{base, cand} {
		for _, r := range side {
			for _, w := range ws {
				if r.At >= w.start && r.At < w.end {
					inside[key{r.TaskID, t.Attrs(r).Repeat}] = true
					break
				}
			}
		}
	}
	keep := func(side []*records.Rec) []*records.Rec {
		out := make([]*records.Rec, 0, len(side))
		for _, r := range side {
			if !inside[key{r.TaskID, t.Attrs(r).Repeat}] {
				out = append(out, r)
			}
		}
		return out
	}
	return keep(base), keep(cand)
}

// lagWarnings name candidates whose load generator lagged differently from
// the baseline's by enough to move a latency guardrail figure: a
// difference of the client side, not of the stack.
func lagWarnings(arms []ArmSummary, g GateConfig) []string {
	if len(arms) < 2 || arms[0].Load == nil || g.P95RegressPct == nil {
		return nil
	}
	base := &arms[0]
	var out []string
	for i := 1; i < len(arms); i++ {
		a := &arms[i]
		if a.Load == nil {
			continue
		}
		diff := math.Abs(a.Load.LagP99Ms - base.Load.LagP99Ms)
		if diff < 1 || diff < base.P95Ms**g.P95RegressPct/100/2 {
			continue
		}
		out = append(out, fmt.Sprintf("%s: the load generator lagged differently (send lag p99 %s ms vs %s ms for %s), enough to move its p95 by half the guardrail's margin: part of its latency difference is the client's, not the stack's; a quieter machine or max_in_flight would tell",
			a.Name, figure.Ms(a.Load.LagP99Ms), figure.Ms(base.Load.LagP99Ms), base.Name))
	}
	return out
}

// inWindow counts the records of one arm sent in w (only the stretch the
// scan flagged, not its margin), its errors and timeouts there, and their
// median latency.
func inWindow(t *records.Symbols, recs []*records.Rec, w window) (sent, failed int, p50 float64) {
	var lat []float64
	for _, r := range recs {
		if !t.Attrs(r).Timed || r.At < w.start || r.At >= w.end {
			continue
		}
		sent++
		if isFailure(t.Str(t.Attrs(r).Outcome)) {
			failed++
		}
		lat = append(lat, r.E2EMs)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		p50 = quantile.NearestRank(lat, 50)
	}
	return sent, failed, p50
}

// timeline is the span of the timed records of every arm, cut into
// clusterBins windows: the first intended send time and a window's width
// in nanoseconds; false when fewer than two distinct times are timed.
func timeline(t *records.Symbols, byArm map[string][]*records.Rec, arms []string) (lo int64, width float64, ok bool) {
	var hi int64
	seen := false
	for _, name := range arms {
		for _, r := range byArm[name] {
			if t.Attrs(r).Timed {
				if !seen || r.At < lo {
					lo = r.At
				}
				hi = max(hi, r.At)
				seen = true
			}
		}
	}
	if !seen || hi <= lo {
		return 0, 0, false
	}
	return lo, float64(hi-lo) / clusterBins, true
}
