package eval

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/inputerr"
	"github.com/crab-testbed/crab/internal/redact"
	"github.com/crab-testbed/crab/stack"

	"go.yaml.in/yaml/v3"
)

// Orders in which arms share the schedule (Experiment.Order).
const (
	OrderPaired     = "paired"
	OrderSwitchback = "switchback"
	OrderSequential = "sequential"
	// OrderInterleaved is the old name of OrderSwitchback, still read.
	OrderInterleaved = "interleaved"
)

// DefaultBlock is the schedule time of one block in switchback order, and
// DefaultBurnIn the stretch at the start of every block whose requests are
// left out of the latency comparison.
const (
	DefaultBlock  = 500 * time.Millisecond
	DefaultBurnIn = 100 * time.Millisecond
)

// DefaultOrder is the order of an experiment that names none: switchback
// when two or more arms run and a model an arm calls can have a latency
// that depends on load (a server, a simulated model with a capacity), so
// that each arm is measured under its own load at the declared rate;
// otherwise paired, which keeps every arm's copy of a task at the same
// moment and, against a backend whose latency cannot depend on load,
// costs nothing in load.
func DefaultOrder(models []stack.ModelSpec, arms []stack.ArmSpec) string {
	if len(arms) >= 2 && loadDependent(models, arms) {
		return OrderSwitchback
	}
	return OrderPaired
}

// loadDependent reports whether an arm calls a model whose latency can
// depend on load: its own, its router's or the one its contract escalates to.
func loadDependent(models []stack.ModelSpec, arms []stack.ArmSpec) bool {
	used := map[string]bool{}
	for _, a := range arms {
		for _, m := range a.Models() {
			used[m] = true
		}
	}
	for _, m := range models {
		if used[m.Name] && m.LoadDependent() {
			return true
		}
	}
	return false
}

// validateOrder checks order, block and burn_in against the arms and the
// arrival, and fills their defaults.
func (e *Experiment) validateOrder(root *yaml.Node, bad badField) error {
	switch e.Order {
	case "":
		e.Order = DefaultOrder(e.Models, e.Arms)
	case OrderInterleaved:
		e.Order = OrderSwitchback
	case OrderPaired, OrderSwitchback, OrderSequential:
	default:
		return bad("order", []any{"order"}, "unknown order %q (want switchback, paired or sequential)", e.Order)
	}
	if e.Order != OrderSwitchback {
		for _, f := range []string{"block", "burn_in"} {
			if (f == "block" && e.Block != 0) || (f == "burn_in" && e.BurnIn != 0) {
				return bad(f, []any{f}, "only for order switchback (order is %s)", e.Order)
			}
		}
		return nil
	}
	if len(e.Arms) < 2 {
		return bad("order", []any{"order"}, "switchback alternates blocks between arms, and the experiment has %d arm: use sequential (or paired) for one arm", len(e.Arms))
	}
	if e.Block < 0 {
		return bad("block", []any{"block"}, "must be more than 0")
	}
	if e.BurnIn < 0 {
		return bad("burn_in", []any{"burn_in"}, "must not be negative")
	}
	if e.Block == 0 {
		e.Block = stack.Duration(DefaultBlock)
	}
	if gap := e.Arrival.meanGap(); gap > 0 && e.Block.Std() < gap {
		return bad("block", []any{"block"}, "%v is shorter than the mean arrival gap %v (%s at %g/s): a block would hold less than one request; use at least %v",
			e.Block.Std(), gap, e.Arrival.Pattern, 1/gap.Seconds(), gap)
	}
	if n := inputerr.Lookup(root, "burn_in"); e.BurnIn == 0 && (n == nil || !zeroDuration(n.Value)) {
		e.BurnIn = stack.Duration(min(DefaultBurnIn, e.Block.Std()/5))
	}
	if e.BurnIn >= e.Block {
		return bad("burn_in", []any{"burn_in"}, "%v is not shorter than the block %v: every request would be burn-in and nothing left to compare", e.BurnIn.Std(), e.Block.Std())
	}
	return nil
}

// meanGap is the longest mean gap between arrivals the pattern declares
// (a ramp's at its lower rate); 0 when it declares none (burst, replay).
func (a *Arrival) meanGap() time.Duration {
	rate := 0.0
	switch a.Pattern {
	case PatternConstant, PatternPoisson, PatternGamma:
		rate = a.Rate
	case PatternRamp:
		rate = min(a.Rate, a.RateEnd)
	}
	if !(rate > 0) {
		return 0
	}
	return time.Duration(float64(time.Second) / rate)
}

// release is one scheduled request of a pass: which arm sends which task,
// at what offset from the pass's start, and, in switchback order, in which
// block (1, 2, ... in time order; 0 in other orders) and whether in the
// block's burn-in.
type release struct {
	arm    int
	seq    int
	off    time.Duration
	block  int
	burnIn bool
}

// PairedPlan releases every scheduled arrival to all arms at its offset,
// the arms in a fresh random order drawn from seed (the first arrival in
// the experiment's order). seq in the plan indexes offsets.
func PairedPlan(offsets []time.Duration, arms int, seed int64) []release {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7061697273)) // "pairs"
	plan := make([]release, 0, len(offsets)*arms)
	order := make([]int, arms)
	for i, off := range offsets {
		for k := range order {
			order[k] = k
		}
		if i > 0 {
			rng.Shuffle(arms, func(a, b int) { order[a], order[b] = order[b], order[a] })
		}
		for _, a := range order {
			plan = append(plan, release{arm: a, seq: i, off: off})
		}
	}
	return plan
}

// SwitchbackPlan cuts the schedule into blocks of span schedule time
// (Blocks) and lays them end to end: each block is played by every arm in
// turn, in a fresh random order drawn from seed (the first block in the
// experiment's order), the next arm's copy of the block starting where the
// previous one's last request was sent. Only one arm sends at a time, at
// the declared rate, so the backend sees each arm's own load; every arm
// plays every block, so a task's copies stay within a few blocks of each
// other in time. Nothing waits for answers and the backend's queue is
// never drained between blocks: a backend that cannot keep up shows as
// latency rather than as a slower schedule, and the previous block's
// requests may still hold it as a block starts. Requests sent in the
// first burnIn of their block are marked burn-in; since every arm's copy
// of a block has the same offsets, the same tasks are burn-in on every
// arm. Blocks are numbered from 1 in time order, one arm's copy each.
func SwitchbackPlan(offsets []time.Duration, span, burnIn time.Duration, arms int, seed int64) []release {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x626c6f636b73)) // "blocks"
	plan := make([]release, 0, len(offsets)*arms)
	var cursor time.Duration
	n := 0
	for bi, b := range Blocks(offsets, span) {
		order := rng.Perm(arms)
		if bi == 0 {
			for i := range order {
				order[i] = i
			}
		}
		for _, a := range order {
			n++
			for i, seq := range b.Seqs {
				plan = append(plan, release{arm: a, seq: seq, off: cursor + b.Offsets[i], block: n, burnIn: b.Offsets[i] < burnIn})
			}
			cursor += b.Offsets[len(b.Offsets)-1]
		}
	}
	return plan
}

// inArmOrder wraps emit so that arms first appear in the records in the
// experiment's order (the baseline first), as a report rebuilt from the
// records alone expects: a record of arm k is held until every arm before
// it has emitted one. flush emits whatever is still held; call it once
// every record is in.
func inArmOrder(names []string, emit func(records.Record)) (wrapped func(records.Record), flush func()) {
	var mu sync.Mutex
	index := make(map[string]int, len(names))
	for i, n := range names {
		index[n] = i
	}
	held := make([][]records.Record, len(names))
	seen := 0 // arms 0..seen-1 have emitted a record
	wrapped = func(rec records.Record) {
		mu.Lock()
		defer mu.Unlock()
		k, ok := index[rec.Arm]
		switch {
		case !ok || k < seen:
			emit(rec)
			return
		case k > seen:
			held[k] = append(held[k], rec)
			return
		}
		emit(rec)
		for seen++; seen < len(names) && len(held[seen]) > 0; seen++ {
			for _, h := range held[seen] {
				emit(h)
			}
			held[seen] = nil
		}
	}
	flush = func() {
		mu.Lock()
		defer mu.Unlock()
		for k := range held {
			for _, h := range held[k] {
				emit(h)
			}
			held[k] = nil
		}
	}
	return wrapped, flush
}

// Block is a run of consecutive scheduled requests: their sequence numbers
// and their send offsets from the block's start.
type Block struct {
	Seqs    []int
	Offsets []time.Duration
}

// Blocks cuts a schedule into blocks of at most span schedule time each.
// A block's offsets are measured from the previous block's last send time,
// so the gap before its first request is the schedule's own and every arm
// sees the declared arrival process inside the block. A schedule whose
// requests all fall within span (a burst) is one block.
func Blocks(offsets []time.Duration, span time.Duration) []Block {
	var out []Block
	var base, end time.Duration
	for i, off := range offsets {
		if len(out) == 0 || off >= end {
			if len(out) > 0 {
				base = offsets[i-1]
			}
			end = off + span
			out = append(out, Block{})
		}
		b := &out[len(out)-1]
		b.Seqs = append(b.Seqs, i)
		b.Offsets = append(b.Offsets, off-base)
	}
	return out
}

// Design is how a run of this order, arrival and models shares its
// backends between arms, for the report's load figures: a model served
// over HTTP is its base URL's (models behind one URL share that server),
// any other model its own (arms calling one simulated model share its
// capacity).
func Design(order string, a Arrival, models []stack.ModelSpec) *analysis.Design {
	if order == OrderInterleaved {
		order = OrderSwitchback
	}
	d := &analysis.Design{Order: order, Backends: map[string]string{}, LoadDependent: map[string]bool{}}
	switch a.Pattern {
	case PatternConstant, PatternPoisson, PatternGamma:
		d.Rate = a.Rate
	}
	for _, m := range models {
		b := m.Name
		if m.Backend == stack.BackendOpenAI && m.BaseURL != "" {
			b = redact.URL(m.BaseURL)
		}
		d.Backends[m.Name] = b
		d.LoadDependent[b] = d.LoadDependent[b] || m.LoadDependent()
		if !m.Priced() {
			d.Unpriced = append(d.Unpriced, m.Name)
		}
	}
	return d
}

// Design is the design of the run the manifest describes.
func (m *Manifest) Design() *analysis.Design { return Design(m.Order, m.Arrival, m.Models) }
