package analysis

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/crab-testbed/crab/internal/quantile"
)

// A resample's percentile by counting ranks is the one sorting gives, ties
// and repeated draws included.
func TestRankSelectMatchesSort(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{1, 2, 3, 20, 101, 480} {
		x := make([]float64, n)
		for i := range x {
			x[i] = float64(rng.IntN(50)) // ties on purpose
		}
		rs := newRankSelect(x)
		for range 50 {
			idx := make([]int32, n)
			for i := range idx {
				idx[i] = int32(rng.IntN(n))
			}
			for _, q := range []float64{0, 50, 95, 99, 100} {
				buf := make([]float64, n)
				for i, j := range idx {
					buf[i] = x[j]
				}
				slices.Sort(buf)
				if got, want := rs.percentile(idx, q), quantile.NearestRank(buf, q); got != want {
					t.Fatalf("n %d p%v: got %v; want %v", n, q, got, want)
				}
			}
		}
	}
}
