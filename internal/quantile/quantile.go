// Package quantile is crab's one percentile rule, nearest rank: for sorted
// values x[1..n], p_q = x[ceil(q·n/100)] and p0 = x[1]. The rank is computed
// in integers (q in hundredths of a percent), so p95 of 20 values is exactly
// the 19th and p99.9 of 1,000 values the 999th. Every figure crab prints as a
// percentile — reports, the cache audit, the shortening proof, the bench
// tools — comes from here.
package quantile

import "math"

// Rank is the 1-based nearest rank of percentile q (in percent) among n
// values: ceil(q·n/100), at least 1. q is rounded to hundredths of a percent
// and clamped to [0, 100].
func Rank(n int, q float64) int {
	h := math.Round(q * 100)
	switch {
	case h < 0:
		h = 0
	case h > 10000:
		h = 10000
	}
	r := (int64(h)*int64(n) + 9999) / 10000
	if r < 1 {
		r = 1
	}
	return int(r)
}

// NearestRank is percentile q (in percent) of sorted (ascending) values. It
// returns NaN for no values or a NaN q.
func NearestRank(sorted []float64, q float64) float64 {
	if len(sorted) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	return sorted[Rank(len(sorted), q)-1]
}

// TailIsMax reports whether percentile q of n values is the sample maximum
// (its nearest rank is n): such a figure is the largest value seen and says
// nothing about how far the tail goes.
func TailIsMax(n int, q float64) bool {
	return n > 0 && !math.IsNaN(q) && Rank(n, q) == n
}
