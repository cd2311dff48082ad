package audit

import (
	"math"
	"math/bits"
	"testing"
)

// The exact p-value against brute force: every ordering of the pooled
// sample is equally likely under the null hypothesis; count those whose D
// reaches each observed value.
func TestKSExactAgainstEnumeration(t *testing.T) {
	t.Parallel()
	for _, sz := range [][2]int{{1, 1}, {2, 3}, {3, 3}, {4, 2}, {5, 5}, {6, 4}, {3, 7}} {
		n, m := sz[0], sz[1]
		total := 0
		counts := map[int64]int{}
		for mask := uint32(0); mask < 1<<(n+m); mask++ {
			if bits.OnesCount32(mask) != n {
				continue
			}
			total++
			var i, j, dmax int64
			for k := 0; k < n+m; k++ {
				if mask&(1<<k) != 0 {
					i++
				} else {
					j++
				}
				d := i*int64(m) - j*int64(n)
				if d < 0 {
					d = -d
				}
				dmax = max(dmax, d)
			}
			counts[dmax]++
		}
		for d := range counts {
			atLeast := 0
			for d2, c := range counts {
				if d2 >= d {
					atLeast += c
				}
			}
			want := float64(atLeast) / float64(total)
			if got := ksExactP(n, m, d); math.Abs(got-want) > 1e-12 {
				t.Errorf("n=%d m=%d D=%d/%d: p = %.15f; want %.15f", n, m, d, n*m, got, want)
			}
		}
	}
}

func TestKS2(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		a, b  []float64
		d     float64
		p     float64
		exact bool
	}{
		{"empty", nil, []float64{1}, 0, 1, true},
		{"identical", []float64{1, 2, 3}, []float64{1, 2, 3}, 0, 1, true},
		{"separated 3+3", []float64{1, 2, 3}, []float64{4, 5, 6}, 1, 2.0 / 20, true},
		{"separated 5+5, reversed", []float64{10, 9, 8, 7, 6}, []float64{1, 2, 3, 4, 5}, 1, 2.0 / 252, true},
		{"ties across samples", []float64{1, 1, 2}, []float64{1, 2, 2}, 1.0 / 3, 1, true},
		// All 40 hits faster than all 40 misses: p = 2 / C(80, 40).
		{"separated 40+40", seq(0, 40), seq(100, 40), 1, 2 / math.Exp(lnChoose(80, 40)), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := KS2(tc.a, tc.b)
			if math.Abs(got.D-tc.d) > 1e-12 || math.Abs(got.P-tc.p) > 1e-9*math.Max(tc.p, 1e-30) || got.Exact != tc.exact {
				t.Fatalf("KS2 = %+v; want D %v, P %v, exact %v", got, tc.d, tc.p, tc.exact)
			}
		})
	}
}

func seq(start float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start + float64(i)
	}
	return out
}

// The asymptotic p-value (used above KSExactLimit) is close to the exact one
// where both can be computed, and the limiting distribution has its
// textbook critical values.
func TestKSAsymptotic(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ lambda, q float64 }{{1.358, 0.05}, {1.628, 0.01}, {1.224, 0.10}} {
		if got := kolmogorovQ(c.lambda); math.Abs(got-c.q) > 0.001 {
			t.Errorf("Q(%v) = %v; want %v", c.lambda, got, c.q)
		}
	}
	const n = 400
	for _, k := range []int64{20, 40, 60} { // D = k/n
		exact := ksExactP(n, n, k*n)
		sq := math.Sqrt(n / 2.0)
		asym := kolmogorovQ((sq + 0.12 + 0.11/sq) * float64(k) / n)
		if math.Abs(exact-asym) > 0.02 {
			t.Errorf("D=%d/%d: exact p %v, asymptotic %v; want within 0.02", k, n, exact, asym)
		}
	}
	big := KS2(seq(0, 1100), seq(0.5, 1100))
	if big.Exact || big.D < 0 || big.D > 1 || big.P < 0 || big.P > 1 {
		t.Fatalf("KS2 of 1100+1100 = %+v; want the asymptotic method and values in [0,1]", big)
	}
}
