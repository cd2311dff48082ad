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
