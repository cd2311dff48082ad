package binom

import (
	"math"
	"testing"
)

func TestUpper(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		x, n int
		conf float64
		want float64
	}{
		// 1 − 0.05^(1/n): the rule of three's exact form.
		{"zero of 10000", 0, 10000, 0.95, 2.9953e-4},
		{"zero of 87", 0, 87, 0.95, 0.033848},
		{"zero of 1", 0, 1, 0.95, 0.95},
		// Reference values of the exact binomial upper bound (the p at
		// which P[X <= x] = 0.05), checked by the CDF below too.
		{"one of 10", 1, 10, 0.95, 0.39416},
		{"five of 100", 5, 100, 0.95, 0.10225},
		{"all", 10, 10, 0.95, 1},
		{"no trials", 0, 0, 0.95, 1},
	}
	for _, tc := range tests {
		got := Upper(tc.x, tc.n, tc.conf)
		if math.Abs(got-tc.want) > 5e-5*math.Max(tc.want, 1e-3) && math.Abs(got-tc.want) > 1e-7 {
			t.Errorf("%s: Upper(%d, %d, %v) = %.6g; want %.6g", tc.name, tc.x, tc.n, tc.conf, got, tc.want)
		}
	}
	if !math.IsNaN(Upper(1, 10, 1)) || !math.IsNaN(Upper(-1, 10, 0.95)) {
		t.Errorf("bad conf or x: want NaN")
	}
}

// The bound is where the binomial CDF of x falls to 1−conf.
func TestUpperIsCDFRoot(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ x, n int }{{1, 10}, {3, 50}, {7, 1000}, {0, 20}} {
		p := Upper95(c.x, c.n)
		if got := cdf(c.x, c.n, p); math.Abs(got-0.05) > 1e-6 {
			t.Errorf("P[X <= %d | n=%d, p=%.6g] = %.8f; want 0.05", c.x, c.n, p, got)
		}
	}
}

func cdf(x, n int, p float64) float64 {
	var s float64
	for k := 0; k <= x; k++ {
		lc, _ := math.Lgamma(float64(n + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		s += math.Exp(lc - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	return s
}

// Interval's ends are the Clopper–Pearson values (the p at which the
// exact binomial tail is 2.5%), and the
// upper end of x = 0 is the one-sided bound at half the error.
func TestInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		x, n   int
		lo, hi float64
	}{
		{"five of 100", 5, 100, 0.016431, 0.112835},
		{"zero of 1000", 0, 1000, 0, 0.0036821},
		{"all of 10", 10, 10, 0.69150, 1},
		{"50 of 1000", 50, 1000, 0.037335, 0.065390},
	}
	for _, tc := range tests {
		lo, hi := Interval(tc.x, tc.n, 0.95)
		if math.Abs(lo-tc.lo) > 1e-5 || math.Abs(hi-tc.hi) > 1e-5 {
			t.Errorf("%s: Interval(%d, %d) = [%.6g, %.6g]; want [%.6g, %.6g]", tc.name, tc.x, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, hi := Interval(0, 0, 0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("Interval(0, 0) = [%v, %v]; want NaN, NaN", lo, hi)
	}
	if got, want := func() float64 { _, hi := Interval(0, 87, 0.95); return hi }(), Upper(0, 87, 0.975); math.Abs(got-want) > 1e-12 {
		t.Errorf("Interval(0, 87) upper %v; want Upper(0, 87, 0.975) = %v", got, want)
	}
}
