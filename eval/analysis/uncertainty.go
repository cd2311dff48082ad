package analysis

import (
	"math"
	"math/rand/v2"
	"slices"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/quantile"
)

// Uncertainty is how far an arm's headline figures can be trusted: 95%
// intervals for p50, p95 and cost per pass, and, with repeats, the spread of
// each repeat's own percentiles.
//
// Percentile intervals are distribution-free order-statistic intervals: for
// the q-quantile of n samples, [x(l), x(u)] with l and u the 2.5% and 97.5%
// points of Binomial(n, q) (exact binomial below 10,000 samples, its normal
// approximation above). They need no resampling, so they cost nothing at a
// million requests. An end that would need a rank beyond the sample is
// null: the sample is too small to bound it (p95 of 6 requests has no upper
// bound). Cost per pass uses a seeded percentile bootstrap over requests
// (1,000 resamples) up to 20,000 requests, and the delta-method normal
// interval of a ratio of means above.
type Uncertainty struct {
	P50CI         Interval      `json:"p50_ci"`
	P95CI         Interval      `json:"p95_ci"`
	CostPerPassCI Interval      `json:"cost_per_pass_ci"`
	Repeats       *RepeatSpread `json:"repeats,omitempty"` // more than one repeat only
}

// Interval is a 95% interval; a nil end is unbounded by the data.
type Interval struct {
	Lo *float64 `json:"lo"`
	Hi *float64 `json:"hi"`
}

// RepeatSpread is the min, median and max across repeats of each repeat's
// own p50, p95 and p99.
type RepeatSpread struct {
	N   int    `json:"n"`
	P50 Spread `json:"p50_ms"`
	P95 Spread `json:"p95_ms"`
	P99 Spread `json:"p99_ms"`
}

// Spread is min, median and max of a few values.
type Spread struct {
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Max    float64 `json:"max"`
}

const (
	costBootstrapResamples = 1000
	costBootstrapMaxN      = 20000
	exactBinomialMaxN      = 10000
)

// uncertainty computes an arm's intervals over its non-warm-up records.
func uncertainty(t *records.Symbols, recs []*records.Rec, seed int64) *Uncertainty {
	sorted := make([]float64, 0, len(recs))
	// A failure whose source gave no duration has no latency to bound.
	timedRec := func(r *records.Rec) bool { return !t.Attrs(r).Warmup && t.Attrs(r).Unmeasured&latencyBit == 0 }
	for _, r := range recs {
		if timedRec(r) {
			sorted = append(sorted, r.E2EMs)
		}
	}
	if len(sorted) == 0 {
		return nil
	}
	slices.Sort(sorted)
	u := &Uncertainty{P50CI: quantileCI(sorted, 0.50), P95CI: quantileCI(sorted, 0.95)}
	u.CostPerPassCI = costPerPassCI(t, recs, seed)
	// Each repeat's latencies in its own stretch of the same buffer.
	repN := map[int]int{}
	for _, r := range recs {
		if timedRec(r) {
			repN[t.Attrs(r).Repeat]++
		}
	}
	at, off := map[int]int{}, 0
	for rep, n := range repN {
		at[rep] = off
		off += n
	}
	for _, r := range recs {
		if a := t.Attrs(r); timedRec(r) {
			sorted[at[a.Repeat]] = r.E2EMs
			at[a.Repeat]++
		}
	}
	byRep := map[int][]float64{}
	for rep, n := range repN {
		byRep[rep] = sorted[at[rep]-n : at[rep]]
	}
	if len(byRep) > 1 {
		var p50, p95, p99 []float64
		for _, lat := range byRep {
			slices.Sort(lat)
			p50, p95, p99 = append(p50, quantile.NearestRank(lat, 50)), append(p95, quantile.NearestRank(lat, 95)), append(p99, quantile.NearestRank(lat, 99))
		}
		u.Repeats = &RepeatSpread{N: len(byRep), P50: spread(p50), P95: spread(p95), P99: spread(p99)}
	}
	return u
}

func spread(v []float64) Spread {
	slices.Sort(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{Min: v[0], Median: med, Max: v[len(v)-1]}
}

// quantileCI is the order-statistic 95% interval of the q-quantile.
func quantileCI(sorted []float64, q float64) Interval {
	n := len(sorted)
	lo, hi := binomialBounds(n, q)
	var iv Interval
	if lo >= 1 {
		iv.Lo = f64p(sorted[lo-1])
	}
	if hi <= n {
		iv.Hi = f64p(sorted[hi-1])
	}
	return iv
}

// binomialBounds returns 1-based ranks l and u such that
// P[X < l] ≤ 2.5% and P[X ≥ u] ≤ 2.5% for X ~ Binomial(n, q): the interval
// [x(l), x(u)] covers the q-quantile with at least 95% probability. l may be
// 0 and u may be n+1 when the sample is too small to bound that side.
func binomialBounds(n int, q float64) (l, u int) {
	if n > exactBinomialMaxN {
		m, sd := float64(n)*q, math.Sqrt(float64(n)*q*(1-q))
		l = int(math.Floor(m - 1.959964*sd))
		u = int(math.Ceil(m+1.959964*sd)) + 1
		return max(l, 0), min(u, n+1)
	}
	// cdf[k] = P[X ≤ k], accumulated in log space for stability.
	lq, lp := math.Log(q), math.Log1p(-q)
	lg := func(k int) float64 {
		a, _ := math.Lgamma(float64(n + 1))
		b, _ := math.Lgamma(float64(k + 1))
		c, _ := math.Lgamma(float64(n - k + 1))
		return a - b - c + float64(k)*lq + float64(n-k)*lp
	}
	cdf := 0.0
	l, u = 0, n+1
	for k := 0; k <= n; k++ {
		cdf += math.Exp(lg(k))
		// X counts the samples at or below the quantile, and
		// P[x(l) ≤ quantile ≤ x(u)] = P[l ≤ X ≤ u-1]. Keep the largest l
		// with P[X ≤ l-1] ≤ 2.5% and the smallest u with P[X ≤ u-1] ≥ 97.5%.
		if cdf <= 0.025 {
			l = k + 1
		}
		if cdf >= 0.975 && u == n+1 {
			u = k + 1
		}
	}
	return l, u
}

// costPerPassCI bounds cost / passes over resampled requests.
func costPerPassCI(t *records.Symbols, recs []*records.Rec, seed int64) Interval {
	n := len(recs)
	// A warm-up record counts as zero cost and no pass.
	figures := func(r *records.Rec) (cost, pass float64) {
		if a := t.Attrs(r); !a.Warmup {
			cost = r.Cost
			if a.Pass {
				pass = 1
			}
		}
		return cost, pass
	}
	var sc, sp float64
	for _, r := range recs {
		c, p := figures(r)
		sc += c
		sp += p
	}
	if sp == 0 {
		return Interval{}
	}
	if n > costBootstrapMaxN {
		// delta method for the ratio of means R = mean(cost) / mean(pass)
		mc, mp := sc/float64(n), sp/float64(n)
		var vc, vp, cv float64
		for _, r := range recs {
			c, p := figures(r)
			dc, dp := c-mc, p-mp
			vc += dc * dc
			vp += dp * dp
			cv += dc * dp
		}
		k := float64(n - 1)
		vc, vp, cv = vc/k, vp/k, cv/k
		r := mc / mp
		se := math.Sqrt((vc-2*r*cv+r*r*vp)/float64(n)) / mp
		return Interval{Lo: f64p(r - 1.959964*se), Hi: f64p(r + 1.959964*se)}
	}
	cost := make([]float64, n)
	pass := make([]float64, n)
	for i, r := range recs {
		cost[i], pass[i] = figures(r)
	}
	src := rand.NewPCG(uint64(seed), 0xc057c057c057c057)
	ratios := make([]float64, 0, costBootstrapResamples)
	for range costBootstrapResamples {
		var c, p float64
		for range n {
			j := boundedIndex(src, uint64(n))
			c += cost[j]
			p += pass[j]
		}
		if p > 0 {
			ratios = append(ratios, c/p)
		}
	}
	if len(ratios) < costBootstrapResamples*95/100 {
		return Interval{} // too many resamples without a pass to bound the ratio
	}
	slices.Sort(ratios)
	return Interval{Lo: f64p(quantile.NearestRank(ratios, 2.5)), Hi: f64p(quantile.NearestRank(ratios, 97.5))}
}
