package analysis

import (
	"math/rand/v2"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/bootstrap"
)

// resampling is how the paired intervals resample the pairs, taken in time
// order: runs of block neighbours from uniformly drawn starts (a circular
// block bootstrap; block 1 resamples pair by pair), or, when starts is
// set, whole switchback blocks drawn with replacement (a cluster
// bootstrap), starts[k] being the position of the k-th block's first pair.
// Either way a resample holds as many pairs as the comparison, its last
// run cut to fit.
type resampling struct {
	block  int
	starts []int32
}

// minSwitchbackBlocks is the fewest switchback blocks the intervals
// resample whole; with fewer, a resample could only repeat a handful of
// blocks, and runs of √n neighbouring pairs are resampled instead.
const minSwitchbackBlocks = 10

// pairResampling chooses the resampling of n pairs in time order
// (timeOrder[k] is the key-order position of the k-th pair in time):
// whole switchback blocks when every baseline request of a pair carries
// its block and there are enough of them, else runs of blockLen(n) pairs.
func pairResampling(q *pairing, timeOrder []int32, n int) resampling {
	type key struct {
		repeat int
		block  int32
	}
	blocked := true
	q.walk(func(b, _ *records.Rec) { blocked = blocked && b.Block > 0 }, func(*records.Rec) {})
	if blocked {
		// The pairs' blocks only now: outside switchback order they
		// would be as many copies of nothing.
		keys := make([]key, 0, n)
		q.walk(func(b, _ *records.Rec) { keys = append(keys, key{q.t.Attrs(b).Repeat, b.Block}) }, func(*records.Rec) {})
		var starts []int32
		for k, i := range timeOrder {
			if k == 0 || keys[i] != keys[timeOrder[k-1]] {
				starts = append(starts, int32(k))
			}
		}
		if len(starts) >= minSwitchbackBlocks {
			return resampling{block: 1, starts: starts}
		}
	}
	return resampling{block: blockLen(n)}
}

// blocks is the number of switchback blocks resampled whole (0: runs).
func (rs resampling) blocks() int { return len(rs.starts) }

// runs is the length in pairs of a resampled run when runs of a fixed
// length are resampled (0 for switchback blocks).
func (rs resampling) runs() int {
	if rs.starts != nil {
		return 0
	}
	return rs.block
}

// single reports whether pairs are resampled one by one.
func (rs resampling) single() bool { return rs.starts == nil && rs.block <= 1 }

// sample appends the n indices of one resample of 0..n-1.
func (rs resampling) sample(src *rand.PCG, n int, idx []int32) []int32 {
	for len(idx) < n {
		from, size := rs.run(int(boundedIndex(src, uint64(rs.draws(n)))), n)
		for j := 0; j < size && len(idx) < n; j++ {
			idx = append(idx, int32((from+j)%n))
		}
	}
	return idx
}

// draws is the number of runs a draw picks among.
func (rs resampling) draws(n int) int {
	if rs.starts != nil {
		return len(rs.starts)
	}
	return n
}

// run is where the k-th run starts and how many pairs it holds.
func (rs resampling) run(k, n int) (from, size int) {
	if rs.starts == nil {
		return k, max(rs.block, 1)
	}
	end := n
	if k+1 < len(rs.starts) {
		end = int(rs.starts[k+1])
	}
	return int(rs.starts[k]), end - int(rs.starts[k])
}

// sums are the sorted bootstrap sums of x (in time order).
func (rs resampling) sums(x []float64, resamples int, draw func(n uint64) uint64) []float64 {
	if rs.starts != nil {
		return bootstrap.ClusterSums(x, rs.starts, resamples, draw)
	}
	return bootstrap.Sums(x, resamples, rs.block, draw)
}

// batches calls f with the bounds of each batch of x's batch-means
// interval: the switchback blocks, or consecutive runs of block values.
func (rs resampling) batches(n int, f func(from, to int)) {
	if rs.starts == nil {
		for i := 0; i < n; i += rs.block {
			f(i, min(i+rs.block, n))
		}
		return
	}
	for k := range rs.starts {
		from, size := rs.run(k, n)
		f(from, from+size)
	}
}
