package eval

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/crab-testbed/crab/eval/records"
)

// Orders in which arms share the schedule (Experiment.Order).
const (
	OrderPaired      = "paired"
	OrderInterleaved = "interleaved"
	OrderSequential  = "sequential"
)

// DefaultBlock is the schedule time of one block in interleaved order.
const DefaultBlock = 500 * time.Millisecond

// release is one scheduled request of a pass: which arm sends which task,
// at what offset from the pass's start.
type release struct {
	arm int
	seq int
	off time.Duration
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

// InterleavedPlan cuts the schedule into blocks of span schedule time
// (Blocks) and lays them end to end: each block is played by every arm in
// a fresh random order drawn from seed (the first block in the
// experiment's order), the next arm's copy of the block starting where the
// previous one's last request was sent. Inside a block an arm sees the
// declared arrival process; nothing waits for answers, so a backend that
// cannot keep up shows as latency rather than as a slower schedule.
func InterleavedPlan(offsets []time.Duration, span time.Duration, arms int, seed int64) []release {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x626c6f636b73)) // "blocks"
	plan := make([]release, 0, len(offsets)*arms)
	var cursor time.Duration
	for bi, b := range Blocks(offsets, span) {
		order := rng.Perm(arms)
		if bi == 0 {
			for i := range order {
				order[i] = i
			}
		}
		for _, a := range order {
			for i, seq := range b.Seqs {
				plan = append(plan, release{arm: a, seq: seq, off: cursor + b.Offsets[i]})
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
