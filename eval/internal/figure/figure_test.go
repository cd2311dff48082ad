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
