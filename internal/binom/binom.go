// Package binom holds crab's one bound on a rate counted in trials: the
// exact one-sided Clopper–Pearson upper bound, used wherever a count of
// rare failures (cache leaks, false hits) must be shown with what it
// proves rather than as a bare zero.
package binom

import (
	"math"

	"gonum.org/v1/gonum/mathext"
)

// Upper returns the exact one-sided upper confidence bound, at level conf
// (e.g. 0.95), on the probability p of an event seen x times in n
// independent trials: the largest p under which seeing at most x events
// still has probability at least 1−conf (Clopper–Pearson, the upper end
// of the conf quantile of Beta(x+1, n−x)). With x = 0 it is
// 1 − (1−conf)^(1/n), about 3/n at 95%: zero leaks in 10,000 probes bound
// the leak rate below 0.03%. It returns 1 for n <= 0 or x >= n, and NaN
// for a conf outside (0, 1) or a negative x.
func Upper(x, n int, conf float64) float64 {
	switch {
	case !(conf > 0 && conf < 1) || x < 0:
		return math.NaN()
	case n <= 0 || x >= n:
		return 1
	case x == 0:
		return -math.Expm1(math.Log1p(-conf) / float64(n))
	}
	return mathext.InvRegIncBeta(float64(x+1), float64(n-x), conf)
}

// Upper95 is Upper(x, n, 0.95).
func Upper95(x, n int) float64 { return Upper(x, n, 0.95) }

// Interval returns the exact two-sided Clopper–Pearson interval, at level
// conf, on the probability of an event seen x times in n trials: the ends
// are the (1−conf)/2 and (1+conf)/2 quantiles of Beta(x, n−x+1) and
// Beta(x+1, n−x), 0 and 1 where x is 0 or n. It returns NaN, NaN for
// n <= 0, x outside [0, n] or a conf outside (0, 1).
func Interval(x, n int, conf float64) (lo, hi float64) {
	if !(conf > 0 && conf < 1) || n <= 0 || x < 0 || x > n {
		return math.NaN(), math.NaN()
	}
	lo, hi = 0, 1
	if x > 0 {
		lo = mathext.InvRegIncBeta(float64(x), float64(n-x+1), (1-conf)/2)
	}
	if x < n {
		hi = mathext.InvRegIncBeta(float64(x+1), float64(n-x), (1+conf)/2)
	}
	return lo, hi
}
