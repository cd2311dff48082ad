package tune

import (
	"testing"

	"github.com/crab-testbed/crab/router"
)

// BenchmarkRouter replays both policies on a 480-task table: split, sweep,
// choice and the holdout report (random baseline and bootstrap included).
func BenchmarkRouter(b *testing.B) {
	samples := workload(480)
	for _, folds := range []int{1, 5} {
		b.Run(map[int]string{1: "folds=1", 5: "folds=5"}[folds], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Router(samples, Config{Seed: 1, Folds: folds}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSweep is one calibration sweep of the threshold router.
func BenchmarkSweep(b *testing.B) {
	samples := workload(480)
	idx := make([]int, len(samples))
	for i := range idx {
		idx[i] = i
	}
	b.ReportAllocs()
	for b.Loop() {
		Sweep(router.PolicyThreshold, samples, idx)
	}
}
