package quantile

import (
	"math"
	"testing"
)

func TestNearestRank(t *testing.T) {
	t.Parallel()
	twenty := make([]float64, 20)
	for i := range twenty {
		twenty[i] = float64(i + 1)
	}
	six := []float64{100, 120, 130, 150, 160, 900}
	thousand := make([]float64, 1000)
	for i := range thousand {
		thousand[i] = float64(i + 1)
	}
	for _, c := range []struct {
		name string
		xs   []float64
		q    float64
		want float64
	}{
		{"p95 of 20 is the 19th", twenty, 95, 19},
		{"p0 is the first", twenty, 0, 1},
		{"p100 is the last", twenty, 100, 20},
		{"p50 of 20 is the 10th", twenty, 50, 10},
		{"p95 of 6 is the maximum", six, 95, 900},
		{"p50 of 6 is the third", six, 50, 130},
		{"p99.9 of 1000 is the 999th", thousand, 99.9, 999},
		{"q above 100 is clamped", six, 150, 900},
		{"q below 0 is clamped", six, -5, 100},
	} {
		if got := NearestRank(c.xs, c.q); got != c.want {
			t.Errorf("%s: got %v; want %v", c.name, got, c.want)
		}
	}
	if got := NearestRank(nil, 50); !math.IsNaN(got) {
		t.Errorf("no values: got %v; want NaN", got)
	}
	if got := NearestRank(six, math.NaN()); !math.IsNaN(got) {
		t.Errorf("NaN q: got %v; want NaN", got)
	}
}

func TestTailIsMax(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		q    float64
		want bool
	}{{6, 95, true}, {20, 95, false}, {100, 99, false}, {99, 99, true}, {0, 50, false}, {1, 0, true}} {
		if got := TailIsMax(c.n, c.q); got != c.want {
			t.Errorf("TailIsMax(%d, %v) = %v; want %v", c.n, c.q, got, c.want)
		}
	}
}

func TestNearestRankTen(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ q, want float64 }{{0, 1}, {10, 1}, {11, 2}, {50, 5}, {90, 9}, {99, 10}, {100, 10}} {
		if got := NearestRank(xs, c.q); got != c.want {
			t.Errorf("NearestRank(1..10, %v): got %v; want %v", c.q, got, c.want)
		}
	}
}
