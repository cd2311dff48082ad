package bootstrap

import (
	"math"
	"testing"

	"github.com/crab-testbed/crab/internal/splitmix"
)

func TestSumCI(t *testing.T) {
	t.Parallel()
	x := make([]float64, 200)
	for i := range x {
		x[i] = float64(i % 2) // sum 100
	}
	for _, block := range []int{1, 5} {
		g := splitmix.New(7)
		lo, hi := SumCI(x, 2000, block, g.Below)
		if !(lo < 100 && 100 < hi) || lo < 70 || hi > 130 {
			t.Errorf("block %d: got [%v, %v]; want an interval around the sum 100, within 70 to 130", block, lo, hi)
		}
		g2 := splitmix.New(7)
		lo2, hi2 := SumCI(x, 2000, block, g2.Below)
		if lo2 != lo || hi2 != hi {
			t.Errorf("block %d: same seed gave [%v, %v] then [%v, %v]; want the same interval", block, lo, hi, lo2, hi2)
		}
	}
}

func TestSumCIConstant(t *testing.T) {
	t.Parallel()
	lo, hi := SumCI([]float64{2, 2, 2}, 100, 1, splitmix.New(1).Below)
	if lo != 6 || hi != 6 {
		t.Errorf("got [%v, %v]; want [6, 6] for constant values", lo, hi)
	}
}

func TestSumCIEmpty(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		x         []float64
		resamples int
	}{{"no values", nil, 100}, {"no resamples", []float64{1}, 0}} {
		if lo, hi := SumCI(tc.x, tc.resamples, 1, splitmix.New(1).Below); !math.IsNaN(lo) || !math.IsNaN(hi) {
			t.Errorf("%s: got [%v, %v]; want NaN, NaN", tc.name, lo, hi)
		}
	}
}

// Clusters of one value each resample as SumCI does value by value; values
// that move together in clusters get the wider interval their clusters'
// spread makes, not the narrow one of as many independent values.
func TestClusterSums(t *testing.T) {
	t.Parallel()
	x := make([]float64, 200)
	for i := range x {
		x[i] = float64(i % 2)
	}
	each := make([]int32, len(x))
	for i := range each {
		each[i] = int32(i)
	}
	lo1, hi1 := SumCI(x, 1000, 1, splitmix.New(3).Below)
	lo2, hi2 := interval(ClusterSums(x, each, 1000, splitmix.New(3).Below))
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("clusters of one: [%v, %v]; want SumCI's [%v, %v]", lo2, hi2, lo1, hi1)
	}
	// 20 clusters of 10 equal values, half 0 and half 1: sum 100 as
	// before, but only 20 independent pieces of evidence.
	var starts []int32
	for i := range x {
		x[i] = float64(i / 10 % 2)
		if i%10 == 0 {
			starts = append(starts, int32(i))
		}
	}
	lo, hi := interval(ClusterSums(x, starts, 1000, splitmix.New(3).Below))
	if !(lo < 100 && 100 < hi) || hi-lo < 2*(hi1-lo1) {
		t.Errorf("20 clusters of 10: [%v, %v]; want an interval around 100 at least twice as wide as the independent one [%v, %v]", lo, hi, lo1, hi1)
	}
}
