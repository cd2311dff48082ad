package analysis

import (
	"cmp"
	"slices"

	"github.com/crab-testbed/crab/internal/quantile"
)

// rankSelect gives a nearest-rank percentile of resamples of one set of
// values without sorting each resample: the values are ranked once, and a
// resample's percentile is found by counting how often it draws each rank,
// O(n) per resample instead of O(n log n). Guardrail intervals take
// thousands of resamples, and sorting them was most of a report's time.
type rankSelect struct {
	sorted []float64 // the values in ascending order
	rank   []int32   // rank[i] is value i's position in sorted
	counts []int32   // scratch: draws per rank in the current resample
}

func newRankSelect(x []float64) *rankSelect {
	order := identity(len(x))
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(x[a], x[b]) })
	rs := &rankSelect{sorted: make([]float64, len(x)), rank: make([]int32, len(x)), counts: make([]int32, len(x))}
	for r, i := range order {
		rs.sorted[r], rs.rank[i] = x[i], int32(r)
	}
	return rs
}

// percentile is percentile q of the values at idx (a resample's indices,
// repeats allowed): the same figure as sorting them and taking
// quantile.NearestRank. Not safe for concurrent use.
func (rs *rankSelect) percentile(idx []int32, q float64) float64 {
	if len(idx) == 0 {
		return quantile.NearestRank(nil, q)
	}
	for _, i := range idx {
		rs.counts[rs.rank[i]]++
	}
	want, seen, v := int32(quantile.Rank(len(idx), q)), int32(0), rs.sorted[len(rs.sorted)-1]
	for r, c := range rs.counts {
		seen += c
		if seen >= want {
			v = rs.sorted[r]
			break
		}
	}
	clear(rs.counts)
	return v
}
