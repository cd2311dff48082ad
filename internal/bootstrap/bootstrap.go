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
	sums := Sums(x, resamples, block, draw)
	if sums == nil {
		return math.NaN(), math.NaN()
	}
	return quantile.NearestRank(sums, 2.5), quantile.NearestRank(sums, 97.5)
}

// Sums are the resampled sums SumCI's interval is read from, sorted: the
// same draws give the same sums, so a test of the sum against a threshold
// (the share of resampled sums on one side of it) agrees with the
// interval. It returns nil for no values or resamples < 1.
func Sums(x []float64, resamples, block int, draw func(n uint64) uint64) []float64 {
	n := len(x)
	if n == 0 || resamples < 1 {
		return nil
	}
	block = max(block, 1)
	sums := make([]float64, resamples)
	for b := range sums {
		s := 0.0
		for k := 0; k < n; {
			start := int(draw(uint64(n)))
			for j := 0; j < block && k < n; j, k = j+1, k+1 {
				s += x[(start+j)%n]
			}
		}
		sums[b] = s
	}
	slices.Sort(sums)
	return sums
}
