package analysis

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/crab-testbed/crab/internal/quantile"
)

// This file holds the statistics of a paired delta: its median, mean and
// 95% interval (bootstrap, batch means or normal, by the number of pairs),
// the resampling they share, and McNemar's exact test on discordant pairs.

// describeDelta computes median, mean and the bootstrap interval of the mean.
// Each kind of delta uses its own random stream, so adding one does not
// shift the others.
func describeDelta(x []float64, seed int64, stream uint64, resamples int) *Delta {
	return describeSorting(slices.Clone(x), seed, stream, resamples, resampling{block: 1})
}

// describeSorting is describeDelta that sorts x in place once it has
// taken the mean and interval, which depend on x's order; the median does
// not. Unless block resamples value by value, x is in time order and the
// interval resamples its runs or switchback blocks (above
// PairBootstrapMaxN: the normal interval of the means of those batches).
func describeSorting(x []float64, seed int64, stream uint64, resamples int, block resampling) *Delta {
	var lo, hi float64
	var means []float64
	switch {
	case len(x) > PairBootstrapMaxN && !block.single():
		lo, hi = batchMeansCI(x, block)
	case len(x) > PairBootstrapMaxN:
		lo, hi = normalMeanCI(x)
	default:
		means = resampledMeans(x, seed, stream, resamples, block)
		lo, hi = meansCI(means)
	}
	mean := meanOf(x)
	return &Delta{Median: medianSorting(x), Mean: mean, CILow: lo, CIHigh: hi, means: means}
}

// PairBootstrapMaxN is the number of pairs above which a paired delta's
// interval is the normal one instead of the bootstrap (see Delta).
const PairBootstrapMaxN = 20000

// normalMeanCI is the normal 95% interval of the mean of x: mean ±
// 1.959964 standard errors (sample standard deviation over √n).
func normalMeanCI(x []float64) (lo, hi float64) {
	n := float64(len(x))
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	m := meanOf(x)
	v := 0.0
	for _, d := range x {
		v += (d - m) * (d - m)
	}
	if len(x) > 1 {
		v /= n - 1
	}
	se := math.Sqrt(v / n)
	return m - 1.959964*se, m + 1.959964*se
}

// batchMeansCI is the normal 95% interval of the mean of x from the means
// of its batches (consecutive runs of block values, or switchback blocks;
// each weighted by its length): correlation within a batch widens the
// interval as it should.
func batchMeansCI(x []float64, block resampling) (lo, hi float64) {
	var means, weights []float64
	block.batches(len(x), func(from, to int) {
		means = append(means, meanOf(x[from:to]))
		weights = append(weights, float64(to-from))
	})
	m := meanOf(x)
	if len(means) < 2 {
		return m, m
	}
	v, w := 0.0, 0.0
	for i := range means {
		v += weights[i] * weights[i] * (means[i] - m) * (means[i] - m)
		w += weights[i]
	}
	k := float64(len(means))
	se := math.Sqrt(v*k/(k-1)) / w
	return m - 1.959964*se, m + 1.959964*se
}

// medianSorting is the middle value of x, or the mean of the two middle
// values; it sorts x.
func medianSorting(x []float64) float64 {
	n := len(x)
	if n == 0 {
		return math.NaN()
	}
	s := x
	slices.Sort(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func meanOf(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// bootstrapMeanCI is a percentile-bootstrap 95% interval of the mean of x:
// resamples means of n values drawn with replacement, and their
// nearest-rank 2.5th and 97.5th percentiles (bootstrap.SumCI over n). The same x, seed and resamples always give
// the same interval (the generator is PCG, drawing indexes without
// modulo bias); stream picks one of several independent streams of a
// seed. It returns NaN, NaN for empty x.
func bootstrapMeanCI(x []float64, seed int64, stream uint64, resamples, block int) (lo, hi float64) {
	return meansCI(bootstrapMeans(x, seed, stream, resamples, block))
}

// bootstrapMeans are the sorted resampled means bootstrapMeanCI reads its
// interval from (nil for empty x).
func bootstrapMeans(x []float64, seed int64, stream uint64, resamples, block int) []float64 {
	return resampledMeans(x, seed, stream, resamples, resampling{block: block})
}

// resampledMeans is bootstrapMeans resampling x's runs or switchback
// blocks as block says.
func resampledMeans(x []float64, seed int64, stream uint64, resamples int, block resampling) []float64 {
	n := len(x)
	if n == 0 {
		return nil
	}
	if resamples <= 0 {
		resamples = DefaultResamples
	}
	src := rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15^stream)
	sums := block.sums(x, resamples, func(n uint64) uint64 { return boundedIndex(src, n) })
	for i := range sums {
		sums[i] /= float64(n)
	}
	return sums
}

// meansCI is the nearest-rank 2.5th and 97.5th percentiles of sorted
// resampled means; NaN, NaN for none.
func meansCI(means []float64) (lo, hi float64) {
	if len(means) == 0 {
		return math.NaN(), math.NaN()
	}
	return quantile.NearestRank(means, 2.5), quantile.NearestRank(means, 97.5)
}

// boundedIndex draws uniformly from [0, n) (Lemire's multiply-and-reject),
// written out so the stream stays the same across Go releases.
func boundedIndex(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

// McNemarExact is the exact two-sided McNemar test on b and c discordant
// pairs: p = min(1, 2·P[X ≤ min(b, c)]) with X ~ Binomial(b+c, 1/2); 1 when
// b+c = 0. Small p means the split between lost and gained tasks is
// unlikely if the two arms were equally good.
func McNemarExact(b, c int) float64 {
	n := b + c
	if n <= 0 || b < 0 || c < 0 {
		return 1
	}
	m := min(b, c)
	// Sum the binomial terms from k = m down to 0; each term is the
	// previous times k/(n-k+1). The largest term (k = m ≤ n/2) is computed
	// in logs so that large n does not underflow 2^-n.
	lg := func(v int) float64 { r, _ := math.Lgamma(float64(v) + 1); return r }
	term := math.Exp(lg(n) - lg(m) - lg(n-m) - float64(n)*math.Ln2)
	sum := 0.0
	for k := m; k >= 0 && term > 0; k-- {
		sum += term
		term *= float64(k) / float64(n-k+1)
	}
	return math.Min(1, 2*sum)
}
