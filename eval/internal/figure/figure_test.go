package figure

import "testing"

func TestFormatters(t *testing.T) {
	t.Parallel()
	cpp := func(v float64) *float64 { return &v }
	tests := []struct{ got, want string }{
		{Ms(133.333), "133.3"},
		{Ms(900), "900"},
		{Ms(-0.01), "-0.01"},
		{Ms(0.0004), "0.0004"},
		{Ms(0), "0"},
		{Pct(0.000004), "0.0004%"},
		{Cost(120), "120"},
		{Cost(-6.666667), "-6.667"},
		{Cost(0.0012346), "0.001235"},
		{Cost(123456.7), "123457"},
		{CostPerPass(cpp(20)), "20.00"},
		{CostPerPass(cpp(0.00123)), "0.00123"},
		{CostPerPass(nil), "-"},
		{Pct(0.4567), "45.7%"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q; want %q", tt.got, tt.want)
		}
	}
}

func TestPointInInterval(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	cpp := func(v float64) string { return CostPerPass(&v) }
	for _, tc := range []struct {
		p            float64
		lo, hi       *float64
		sp, slo, shi string
	}{
		{0.65359, f(0.65359), f(0.65359), "0.6536", "0.6536", "0.6536"},
		{0.654, f(0.6), f(0.7), "0.654", "0.6", "0.7"},
		{900, f(130), nil, "900.00", "130", "?"},
	} {
		sp, slo, shi := PointInInterval(tc.p, tc.lo, tc.hi, cpp)
		if sp != tc.sp || slo != tc.slo || shi != tc.shi {
			t.Errorf("PointInInterval(%v) = %s [%s, %s]; want %s [%s, %s]", tc.p, sp, slo, shi, tc.sp, tc.slo, tc.shi)
		}
	}
	if got := PctVsLimit(10.4, 10); got != "+10.4%" {
		t.Errorf("PctVsLimit(10.4, 10) = %s; want +10.4%%", got)
	}
	if got := PctVsLimit(10.0000000001, 10); got == "+10%" {
		t.Errorf("PctVsLimit just beyond 10 printed %s, as if at the limit", got)
	}
	if got := PctVsLimit(24, 10); got != "+24%" {
		t.Errorf("PctVsLimit(24, 10) = %s; want +24%%", got)
	}
}
