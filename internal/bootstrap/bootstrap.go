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
	return interval(Sums(x, resamples, block, draw))
}

// Sums are the resampled sums SumCI's interval is read from, sorted: the
// same draws give the same sums, so a test of the sum against a threshold
// (the share of resampled sums on one side of it) agrees with the
// interval. It returns nil for no values or resamples < 1.
func Sums(x []float64, resamples, block int, draw func(n uint64) uint64) []float64 {
	block = max(block, 1)
	return runSums(x, resamples, draw, func(start int) (from, n int) { return start, block })
}

// ClusterSums are Sums resampling whole clusters of consecutive values:
// starts are the first index of each cluster, ascending from 0, and a
// resample is clusters drawn uniformly with replacement, the last cut to
// make len(x). It is the bootstrap for values that move together within a
// cluster (a block of time in which one arm had the backend to itself) and
// independently across clusters. Without starts it is Sums value by value.
func ClusterSums(x []float64, starts []int32, resamples int, draw func(n uint64) uint64) []float64 {
	if len(starts) == 0 {
		return Sums(x, resamples, 1, draw)
	}
	n := len(x)
	return runSums(x, resamples, func(uint64) uint64 { return draw(uint64(len(starts))) }, func(k int) (from, size int) {
		end := n
		if k+1 < len(starts) {
			end = int(starts[k+1])
		}
		return int(starts[k]), end - int(starts[k])
	})
}

// Interval is the percentile 95% interval of resampled statistics that
// are not sums (a knee read off a curve, a ratio of two): the nearest-rank
// 2.5th and 97.5th percentiles of stats, sorted; NaN, NaN for none.
func Interval(sorted []float64) (lo, hi float64) {
	if len(sorted) == 0 {
		return interval(nil)
	}
	return interval(sorted)
}

// interval is the nearest-rank 2.5th and 97.5th percentiles of sorted
// sums; NaN, NaN for none.
func interval(sums []float64) (lo, hi float64) {
	if sums == nil {
		return math.NaN(), math.NaN()
	}
	return quantile.NearestRank(sums, 2.5), quantile.NearestRank(sums, 97.5)
}

// runSums are the sorted sums of resamples made of runs: draw(len(x))
// picks a run, run(k) says where it starts and how long it is (wrapping at
// len(x)), and runs are added until len(x) values are in, the last cut.
func runSums(x []float64, resamples int, draw func(n uint64) uint64, run func(k int) (from, size int)) []float64 {
	n := len(x)
	if n == 0 || resamples < 1 {
		return nil
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
	return sums
}
