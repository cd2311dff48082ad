// Package bootstrap is crab's one percentile bootstrap: the 95% interval
// of a sum over resamples drawn with replacement, its ends the nearest-rank
// 2.5th and 97.5th percentiles of the resampled sums (package quantile).
// The caller brings the random draw, so that every figure keeps its own
// seeded stream (a report's paired deltas, a tuning's holdout intervals).
package bootstrap

import (
	"math"
	"slices"

	"github.com/crab-testbed/crab/internal/quantile"
)

// SumCI is the percentile 95% interval of the sum of x over resamples
// resamples of len(x) values drawn with replacement; draw(n) returns a
// uniform index in [0, n). With block > 1 a resample is runs of block
// consecutive values (wrapping at len(x)) from uniformly drawn starts, the
// last run cut to make len(x): a circular block bootstrap, for values
// whose neighbours move together. A mean's interval is SumCI divided by
// len(x). It returns NaN, NaN for no values or resamples < 1.
func SumCI(x []float64, resamples, block int, draw func(n uint64) uint64) (lo, hi float64) {
	block = max(block, 1)
	return runsSumCI(x, resamples, draw, func(start int) (from, n int) { return start, block })
}

// ClusterSumCI is SumCI resampling whole clusters of consecutive values
// instead of runs of a fixed length: starts are the first index of each
// cluster, ascending from 0, and a resample is clusters drawn uniformly
// with replacement, the last cut to make len(x). It is the bootstrap for
// values that move together within a cluster (a block of time in which
// one arm had the backend to itself) and independently across clusters.
func ClusterSumCI(x []float64, starts []int32, resamples int, draw func(n uint64) uint64) (lo, hi float64) {
	if len(starts) == 0 {
		return SumCI(x, resamples, 1, draw)
	}
	n := len(x)
	return runsSumCI(x, resamples, func(uint64) uint64 { return draw(uint64(len(starts))) }, func(k int) (from, size int) {
		end := n
		if k+1 < len(starts) {
			end = int(starts[k+1])
		}
		return int(starts[k]), end - int(starts[k])
	})
}

// runsSumCI is the percentile interval of the sum of x over resamples made
// of runs: draw(len(x)) picks a run, run(k) says where it starts and how
// long it is (wrapping at len(x)), and runs are added until len(x) values
// are in, the last cut.
func runsSumCI(x []float64, resamples int, draw func(n uint64) uint64, run func(k int) (from, size int)) (lo, hi float64) {
	n := len(x)
	if n == 0 || resamples < 1 {
		return math.NaN(), math.NaN()
	}
	sums := make([]float64, resamples)
	for b := range sums {
		s := 0.0
		for k := 0; k < n; {
			from, size := run(int(draw(uint64(n))))
			for j := 0; j < size && k < n; j, k = j+1, k+1 {
				s += x[(from+j)%n]
			}
		}
		sums[b] = s
	}
	slices.Sort(sums)
	return quantile.NearestRank(sums, 2.5), quantile.NearestRank(sums, 97.5)
}
