package report

import (
	"math"
	"strings"
	"testing"
)

// The sweep's page holds the figures as text and both charts, with a
// dashed knee line for each arm whose knee lies inside the ladder; a
// rung without a p95 and an arm without a knee are left out, not drawn
// at 0.
func TestWriteSweepHTML(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	err := WriteSweepHTML(&b, SweepPage{
		Title: "crab sweep: x.yaml",
		Text:  "baseline knee 13.2/s <between rungs>",
		Arms: []SweepArm{
			{Name: "baseline", Rates: []float64{6, 12, 18}, GoodputRPS: []float64{5.9, 11.7, 2}, P95Ms: []float64{2300, 2400, math.NaN()}, Knee: 13.2},
			{Name: "cache_scoped", Rates: []float64{6, 12, 18}, GoodputRPS: []float64{5.9, 11.8, 17.5}, P95Ms: []float64{2200, 2250, 2600}, Knee: math.NaN()},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if n := strings.Count(page, "<svg"); n != 2 {
		t.Errorf("got %d charts; want 2 (goodput and p95)", n)
	}
	for _, want := range []string{"baseline", "cache_scoped", "&lt;between rungs&gt;", "Goodput against offered rate", "p95 latency against offered rate"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "could not be drawn") {
		t.Errorf("a chart failed: %s", page)
	}
}

func TestWriteSweepHTMLEmpty(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	if err := WriteSweepHTML(&b, SweepPage{Title: "t", Arms: []SweepArm{{Name: "a", Knee: math.NaN()}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "</html>") {
		t.Error("want a whole page without data")
	}
}
