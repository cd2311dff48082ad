package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/words"
)

// Interference is whether one arm's latency at one backend moved with the
// other arms' load on it. For each of the arm's requests in the latency
// comparison (burn-in, cancelled requests and the run's stall and failure
// windows left out), it counts the other arms' requests to the same
// backend in flight as it was sent (sent before it, answered after), and
// ranks latency against that count: Spearman's rank correlation, and the
// one-sided p-value of a correlation that large among independent values
// (normal approximation, ρ·√(n−1)). In switchback order with a long enough
// burn-in no compared request meets another arm's, and there is nothing to
// test; in paired order every request meets them, and against a backend
// whose latency depends on load the correlation shows it.
type Interference struct {
	Arm     string `json:"arm"`
	Backend string `json:"backend"`
	// Requests is the arm's requests tested, Exposed those sent while
	// another arm's request to the backend was in flight.
	Requests int `json:"requests"`
	Exposed  int `json:"exposed"`
	// Rho and P are the rank correlation and its p-value; null when the
	// count never varied (nothing to correlate).
	Rho *float64 `json:"rho"`
	P   *float64 `json:"p"`
	// Beyond says the arm's latency rose with the others' load beyond
	// chance: P below interferenceAlpha over the tests, and Rho at least
	// interferenceMinRho.
	Beyond bool `json:"beyond_chance"`
}

// Interference thresholds: the run-wide error rate of the warning (split
// over the arm and backend pairs tested) and the least correlation worth
// a warning at any sample size.
const (
	interferenceAlpha  = 1e-3
	interferenceMinRho = 0.1
	interferenceMinN   = 30
)

// sweep is the start and end times of a set of flights (a flight is one
// request's time at a backend, [start, end) in Unix nanoseconds from its
// intended send time to its end), each sorted: the
// flights in progress at a moment are those started by then, less those
// ended by then.
type sweep struct{ starts, ends []int64 }

// at is the number of flights in progress at a moment.
func (s sweep) at(t int64) int {
	started, _ := slices.BinarySearch(s.starts, t+1)
	ended, _ := slices.BinarySearch(s.ends, t+1)
	return started - ended
}

// crowd counts, for a request, the other arms' requests to its backend in
// flight as it was sent.
type crowd struct {
	t *records.Symbols
	d *Design
	// shared holds, for each backend more than one arm called, every such
	// arm's flights there, in arms' order: the count of flights in
	// progress adds up over the arms, so the others' count is the sum of
	// theirs, with no sweep of every arm's flights together. An arm's
	// sweeps are gathered (load) only while a count needs them.
	shared map[string][]*armSweep
	// sent counts each arm's sent requests at each backend.
	sent map[armBackend]int
}

type armBackend struct{ arm, backend string }

// armSweep is one arm's flights at one backend.
type armSweep struct {
	arm    string
	loaded bool
	sweep
}

// newCrowd counts every arm's timed, sent requests by backend; their
// flights are gathered arm by arm (load), each into slices of their exact
// size: on millions of requests the sweeps are the largest thing the
// summary holds.
func newCrowd(t *records.Symbols, byArm map[string][]*records.Rec, arms []string, d *Design) *crowd {
	counts := map[armBackend]int{}
	c := &crowd{t: t, d: d, shared: map[string][]*armSweep{}, sent: counts}
	users := map[string][]string{}
	for _, name := range arms {
		for _, r := range byArm[name] {
			if !sent(t, r) {
				continue
			}
			k := armBackend{name, d.backend(t.Str(t.Attrs(r).Model))}
			if counts[k] == 0 {
				users[k.backend] = append(users[k.backend], name)
			}
			counts[k]++
		}
	}
	for b, names := range users {
		if len(names) < 2 {
			continue
		}
		for _, name := range names {
			c.shared[b] = append(c.shared[b], &armSweep{arm: name})
		}
	}
	return c
}

// load gathers arm's flights at every shared backend, from recs, its
// records.
func (c *crowd) load(arm string, recs []*records.Rec) {
	mine := map[string]*armSweep{}
	for b, ss := range c.shared {
		for _, s := range ss {
			if s.arm == arm && !s.loaded {
				n := c.sent[armBackend{arm, b}]
				s.starts, s.ends, s.loaded = make([]int64, 0, n), make([]int64, 0, n), true
				mine[b] = s
			}
		}
	}
	if len(mine) == 0 {
		return
	}
	for _, r := range recs {
		if !sent(c.t, r) {
			continue
		}
		if s := mine[c.d.backend(c.t.Str(c.t.Attrs(r).Model))]; s != nil {
			s.starts, s.ends = append(s.starts, r.At), append(s.ends, r.At+int64(r.E2EMs*1e6))
		}
	}
	for _, s := range mine {
		slices.Sort(s.starts)
		slices.Sort(s.ends)
	}
}

// drop lets the collector have arm's flights.
func (c *crowd) drop(arm string) {
	for _, ss := range c.shared {
		for _, s := range ss {
			if s.arm == arm {
				s.sweep, s.loaded = sweep{}, false
			}
		}
	}
}

// sent reports whether a record carries a send time and reached its
// backend (a cancelled request never did).
func sent(t *records.Symbols, r *records.Rec) bool {
	return t.Attrs(r).Timed && r.At != 0 && t.Str(t.Attrs(r).Outcome) != records.OutcomeCancelled
}

// others is the number of other arms' requests to r's backend in flight as
// r was sent, and its backend; false when no other arm called it or r was
// not sent.
func (c *crowd) others(arm string, r *records.Rec) (int, string, bool) {
	if !sent(c.t, r) {
		return 0, "", false
	}
	b := c.d.backend(c.t.Str(c.t.Attrs(r).Model))
	ss, ok := c.shared[b]
	if !ok {
		return 0, b, false
	}
	n := 0
	for _, s := range ss {
		if s.arm != arm {
			if !s.loaded {
				panic("analysis: the crowd counted " + arm + "'s request without " + s.arm + "'s flights")
			}
			n += s.at(r.At)
		}
	}
	return n, b, true
}

// carryOver adds to *out, in switchback order (records that carry their
// block), arm's requests sent while another arm's request to the same
// backend was still in flight: the previous block's queue outlasted the
// burn-in, and their latency holds part of another arm's load. They are
// left out of the latency figures like burn-in. *out stays nil while
// there are none.
func carryOver(t *records.Symbols, arm string, recs []*records.Rec, c *crowd, out *map[*records.Rec]bool) {
	for _, r := range recs {
		if r.Block == 0 || t.Attrs(r).BurnIn {
			continue
		}
		if n, _, ok := c.others(arm, r); ok && n > 0 {
			if *out == nil {
				*out = map[*records.Rec]bool{}
			}
			(*out)[r] = true
		}
	}
}

// crowdFigures finds, arm by arm, the carry-over requests (see
// carryOver) and tests every arm at every backend that another arm also
// called, over its requests in the latency comparison outside the windows
// ws (nil when no backend is shared). Each arm is counted against the
// others' flights, gathered for it and let go once no later arm needs
// them: with two arms, one arm's flights are held at a time.
func crowdFigures(t *records.Symbols, byArm map[string][]*records.Rec, arms []string, d *Design, left leftOut, ws []window) (carry map[*records.Rec]bool, out []Interference) {
	c := newCrowd(t, byArm, arms, d)
	for i, name := range arms {
		for j, other := range arms {
			if j != i {
				c.load(other, byArm[other])
			}
		}
		carryOver(t, name, byArm[name], c, &carry)
		crowded := armCrowding(t, name, byArm[name], c, left, ws)
		for j, other := range arms { // before the test, which needs them no more
			later := false // a later arm counts against j's flights
			for k := i + 1; k < len(arms); k++ {
				later = later || k != j
			}
			if !later {
				c.drop(other)
			}
		}
		armLatencies(t, byArm[name], c, left, ws, crowded)
		out = append(out, armInterference(name, crowded)...)
	}
	for i := range out {
		if p := out[i].P; p != nil {
			out[i].Beyond = *p < interferenceAlpha/float64(len(out)) && *out[i].Rho >= interferenceMinRho
		}
	}
	return carry, out
}

// tested is one arm's requests at one backend in an interference test:
// the other arms' requests in flight as each was sent, and its latency.
type tested struct {
	xs []int32
	ys []float64
}

// armCrowding gathers the counts armInterference tests arm's requests
// on, by backend: the counts need the other arms' flights, the test no
// longer. The latencies come after (armLatencies), once the flights are
// let go.
func armCrowding(t *records.Symbols, name string, recs []*records.Rec, c *crowd, left leftOut, ws []window) map[string]*tested {
	at := map[string]*tested{}
	for _, r := range recs {
		if left.out(t, r) || inWindows(r.At, ws) {
			continue
		}
		n, b, ok := c.others(name, r)
		if !ok {
			continue
		}
		ts := at[b]
		if ts == nil {
			ts = &tested{xs: make([]int32, 0, c.sent[armBackend{name, b}])} // at most that many
			at[b] = ts
		}
		ts.xs = append(ts.xs, int32(n))
	}
	return at
}

// armLatencies adds to at, armCrowding's counts, the latencies of the
// same requests, in the same order.
func armLatencies(t *records.Symbols, recs []*records.Rec, c *crowd, left leftOut, ws []window, at map[string]*tested) {
	for _, ts := range at {
		ts.ys = make([]float64, 0, len(ts.xs))
	}
	for _, r := range recs {
		if left.out(t, r) || inWindows(r.At, ws) || !sent(t, r) {
			continue
		}
		if ts := at[c.d.backend(t.Str(t.Attrs(r).Model))]; ts != nil {
			ts.ys = append(ts.ys, r.E2EMs)
		}
	}
}

// armInterference is interference's tests of arm name on what
// armCrowding gathered, which it consumes.
func armInterference(name string, at map[string]*tested) []Interference {
	var out []Interference
	for _, b := range sortedKeys(at) {
		ts := at[b]
		in := Interference{Arm: name, Backend: b, Requests: len(ts.xs)}
		for _, x := range ts.xs {
			if x > 0 {
				in.Exposed++
			}
		}
		if len(ts.xs) >= interferenceMinN {
			ry := rankInPlace(ts.ys)
			if rho, ok := spearman(countRanks(ts.xs), ry); ok {
				p := distuv.UnitNormal.Survival(rho * math.Sqrt(float64(len(ts.xs)-1)))
				in.Rho, in.P = &rho, &p
			}
		}
		delete(at, b)
		out = append(out, in)
	}
	return out
}

// inWindows reports whether at falls in one of ws.
func inWindows(at int64, ws []window) bool {
	for _, w := range ws {
		if at >= w.start && at < w.end {
			return true
		}
	}
	return false
}

// spearman is the rank correlation of the values ranked rx and ry (see
// rankInPlace); false when either does not vary.
func spearman(rx, ry []float64) (float64, bool) {
	rho := stat.Correlation(rx, ry, nil)
	if math.IsNaN(rho) {
		return 0, false
	}
	return rho, true
}

// rankInPlace replaces each value of x by its rank, 1 for the smallest;
// equal values share the mean of their ranks (so the order among them in
// the sort does not matter). It returns x.
func rankInPlace(x []float64) []float64 {
	idx := identity(len(x))
	slices.SortFunc(idx, func(a, b int32) int {
		switch {
		case x[a] < x[b]:
			return -1
		case x[a] > x[b]:
			return 1
		}
		return 0
	})
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && x[idx[j]] == x[idx[i]] {
			j++
		}
		// The run of equal values ends at j: only now are they replaced,
		// and no later run reads them.
		for k := i; k < j; k++ {
			x[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return x
}

// countRanks is the ranks of counts (0 or more; see rankInPlace), by counting each value
// instead of sorting: the same ranks in linear time.
func countRanks(x []int32) []float64 {
	top := int32(0)
	for _, v := range x {
		top = max(top, v)
	}
	below := make([]int, top+2) // below[v+1] counts v, then the values under v+1
	for _, v := range x {
		below[v+1]++
	}
	for v := 1; v < len(below); v++ {
		below[v] += below[v-1]
	}
	r := make([]float64, len(x))
	for k, v := range x {
		i, j := below[v], below[v+1] // the sorted positions of the values equal to v
		r[k] = float64(i+j+1) / 2
	}
	return r
}

// String describes a test that found interference, for a warning.
func (in Interference) String() string {
	return fmt.Sprintf("%s's latency at %s rose with the other arms' requests in flight there (rank correlation %s over %d requests, %d of them sent beside another arm's; p = %s): part of its latency is the other arms' load",
		in.Arm, in.Backend, figure.Sig(*in.Rho, 2), in.Requests, in.Exposed, figure.P(*in.P))
}

// Interfered is the test that found an arm's latency, or the baseline's,
// moving with the other arms' load beyond chance (nil when none did): the
// latency comparison of that arm then holds part of another arm's load,
// which the design cannot separate from its own. Summarize sets the tests
// before the gate decides.
func (s *Summary) Interfered(arm string) *Interference {
	for i := range s.Interference {
		if in := &s.Interference[i]; in.Beyond && (in.Arm == arm || in.Arm == s.Baseline) {
			return in
		}
	}
	return nil
}

// loadNotes say under what load each arm was measured: the order, and
// per arm the calls per second its backends carried while it sent.
func loadNotes(s *Summary, d *Design) []string {
	var out []string
	order := ""
	if d != nil {
		order = d.Order
	}
	burnIn, carry, stalled, blocks := 0, 0, 0, 0
	for i := range s.Arms {
		burnIn += s.Arms[i].BurnIn
		carry += s.Arms[i].CarryOver
		stalled += s.Arms[i].Stalled
		if p := s.Arms[i].Paired; p != nil {
			blocks = max(blocks, p.Blocks)
		}
	}
	switch {
	case order == "switchback" || burnIn > 0:
		n := fmt.Sprintf("order switchback: one arm at a time, in randomised blocks at the declared rate, the backend's queue never drained between blocks; %s sent in a block's burn-in and %s that waited through a stall of the backend count for quality, cost and failures but not in any latency figure; %s sent after the burn-in while another arm's request still held the backend (carry-over, a long or hung request of the previous block) stay in latency, and the interference test says whether their latency moved with it",
			words.Count(burnIn, "request"), words.Count(stalled, "request"), words.Count(carry, "request"))
		if blocks > 0 {
			n += fmt.Sprintf("; the paired intervals resample whole switchback blocks (%d)", blocks)
		}
		out = append(out, n)
	case order == "paired" && len(s.Arms) > 1:
		rate := ""
		if d.Rate > 0 {
			rate = fmt.Sprintf(" (%d arms × %s/s declared)", len(s.Arms), figure.Sig(d.Rate, 3))
		}
		out = append(out, fmt.Sprintf("order paired: every arm's copy of a task was sent at the same moment, so a backend the arms share carried every arm's load%s while each arm was measured; where its latency depends on load, each arm's latency includes the queue the others made", rate))
	}
	var per []string
	for i := range s.Arms {
		a := &s.Arms[i]
		if a.Load == nil {
			continue
		}
		for _, l := range a.Load.Offered {
			per = append(per, fmt.Sprintf("%s %s/s of its own at %s, which carried %s/s", a.Name, figure.Sig(l.CallsPerS, 3), l.Backend, figure.Sig(l.BackendCallsPerS, 3)))
		}
	}
	if len(per) > 0 {
		out = append(out, "load each arm was measured under (calls per second while it sent): "+strings.Join(per, "; "))
	}
	return out
}

// interferenceWarnings warn of every arm whose latency moved with the other
// arms' load beyond chance, with what would measure it alone.
func interferenceWarnings(s *Summary, d *Design) {
	for _, in := range s.Interference {
		if !in.Beyond {
			continue
		}
		fix := "run order: switchback, which measures each arm under its own load"
		if d != nil && d.Order == "switchback" {
			fix = "the previous block's requests still held the backend after the burn-in: a longer burn_in (or block) would leave that carry-over out"
		}
		s.Decision.Warnings = append(s.Decision.Warnings, "arms interfere: "+in.String()+"; "+fix)
	}
}
