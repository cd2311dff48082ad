package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

func TestMcNemarExact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		b, c int
		want float64
	}{
		{0, 0, 1},
		{0, 1, 1},
		{1, 1, 1},
		{0, 5, 0.0625},
		{5, 0, 0.0625},
		{0, 6, 0.03125},
		{1, 5, 0.21875},      // 2·(1+6)/64
		{2, 8, 0.109375},     // 2·(1+10+45)/1024
		{3, 3, 1},            // capped at 1
		{10, 0, 0.001953125}, // 2/1024
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("b=%d,c=%d", tt.b, tt.c), func(t *testing.T) {
			t.Parallel()
			if got := McNemarExact(tt.b, tt.c); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("McNemarExact(%d, %d) = %v; want %v", tt.b, tt.c, got, tt.want)
			}
		})
	}
	// Large n: no underflow to NaN, symmetric splits stay at 1.
	if got := McNemarExact(5000, 5000); got != 1 {
		t.Errorf("McNemarExact(5000, 5000) = %v; want 1", got)
	}
	if got := McNemarExact(0, 3000); got < 0 || got > 1e-300 || math.IsNaN(got) {
		t.Errorf("McNemarExact(0, 3000) = %v; want a value in [0, 1e-300]", got)
	}
	if got := McNemarExact(450, 550); got <= 0.001 || got >= 0.01 {
		// two-sided binomial tail of 450 of 1000: about 0.0017
		t.Errorf("McNemarExact(450, 550) = %v; want about 0.0017", got)
	}
}

func TestBootstrapMeanCI(t *testing.T) {
	t.Parallel()
	x := []float64{-10, -20, -20, -30, -20, -400}
	lo1, hi1 := bootstrapMeanCI(x, 42, 0, 2000, 1)
	lo2, hi2 := bootstrapMeanCI(x, 42, 0, 2000, 1)
	if lo1 != lo2 || hi1 != hi2 {
		t.Errorf("same seed gave [%v, %v] and [%v, %v]; want identical", lo1, hi1, lo2, hi2)
	}
	lo3, hi3 := bootstrapMeanCI(x, 43, 0, 2000, 1)
	if lo1 == lo3 && hi1 == hi3 {
		t.Errorf("seeds 42 and 43 gave the same interval [%v, %v]; want them to differ", lo1, hi1)
	}
	m := meanOf(x)
	if !(lo1 <= m && m <= hi1) || lo1 < -400 || hi1 > -10 {
		t.Errorf("interval [%v, %v]; want it inside [-400, -10] and around the mean %v", lo1, hi1, m)
	}
	if lo, hi := bootstrapMeanCI([]float64{7, 7, 7}, 1, 0, 100, 1); lo != 7 || hi != 7 {
		t.Errorf("constant data interval [%v, %v]; want [7, 7]", lo, hi)
	}
	if lo, hi := bootstrapMeanCI(nil, 1, 0, 100, 1); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("empty data interval [%v, %v]; want NaN", lo, hi)
	}
}

// TestBootstrapStable pins the generator and the interval: a change here
// changes every golden report.
func TestBootstrapStable(t *testing.T) {
	t.Parallel()
	src := rand.NewPCG(1, 2)
	var got []uint64
	for range 8 {
		got = append(got, boundedIndex(src, 10))
	}
	if want := []uint64{7, 6, 7, 7, 2, 0, 4, 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("boundedIndex stream = %v; want %v", got, want)
	}
	lo, hi := bootstrapMeanCI([]float64{-10, -20, -20, -30, -20, -400}, 42, 0, 2000, 1)
	if lo != -210 || math.Abs(hi-(-50.0/3)) > 1e-9 {
		t.Errorf("interval [%v, %v]; want [-210, -16.667]", lo, hi)
	}
}

func TestComparePaired(t *testing.T) {
	t.Parallel()
	base := []Record{
		mkRec("base", "t1", 100, OutcomeOK, true, 10),
		mkRec("base", "t2", 100, OutcomeOK, true, 10),
		mkRec("base", "t3", 100, OutcomeTimeout, false, 10),
		mkRec("base", "t4", 100, OutcomeOK, true, 10),
		mkRec("base", "only_base", 100, OutcomeOK, true, 10),
	}
	cand := []Record{
		mkRec("cand", "t4", 70, OutcomeOK, true, 5),
		mkRec("cand", "t3", 90, OutcomeOK, true, 5),
		mkRec("cand", "t2", 80, OutcomeError, false, 5),
		mkRec("cand", "t1", 60, OutcomeOK, true, 5),
		mkRec("cand", "only_cand", 1, OutcomeOK, true, 1),
	}
	for i, g := range []string{"short", "short", "long", "long", "long"} {
		base[i].Group = g
	}
	p := comparePairedRecs(t, base, cand, PairOptions{Seed: 1, Resamples: 500})
	if p.Baseline != "base" || p.Pairs != 4 {
		t.Errorf("baseline %q, pairs %d; want base, 4", p.Baseline, p.Pairs)
	}
	if !reflect.DeepEqual(p.Lost, []string{"t2"}) || !reflect.DeepEqual(p.Gained, []string{"t3"}) {
		t.Errorf("lost %v, gained %v; want [t2], [t3]", p.Lost, p.Gained)
	}
	if !reflect.DeepEqual(p.Unmatched, []string{"only_base", "only_cand"}) {
		t.Errorf("unmatched %v; want [only_base only_cand]", p.Unmatched)
	}
	if p.McNemarP != 1 {
		t.Errorf("mcnemar_p %v; want 1", p.McNemarP)
	}
	// deltas -40, -20, -10, -30: median -25, mean -25
	if d := p.LatencyDeltaMs; d.Median != -25 || d.Mean != -25 || d.CILow < -40 || d.CIHigh > -10 || d.CILow > d.CIHigh {
		t.Errorf("latency delta %+v; want median -25, mean -25, interval inside [-40, -10]", *d)
	}
	if d := p.CostDelta; d.Median != -5 || d.Mean != -5 || d.CILow != -5 || d.CIHigh != -5 {
		t.Errorf("cost delta %+v; want all -5", *d)
	}
	wantGroups := map[string]GroupDelta{
		"short": {Pairs: 2, Lost: 1, LatencyDeltaMs: -30},   // t1 -40, t2 -20
		"long":  {Pairs: 2, Gained: 1, LatencyDeltaMs: -20}, // t3 -10, t4 -30
	}
	if !reflect.DeepEqual(p.Groups, wantGroups) {
		t.Errorf("groups %+v; want %+v", p.Groups, wantGroups)
	}

	// Order of records does not matter.
	rev := func(r []Record) []Record {
		out := make([]Record, len(r))
		for i := range r {
			out[len(r)-1-i] = r[i]
		}
		return out
	}
	q := comparePairedRecs(t, rev(base), rev(cand), PairOptions{Seed: 1, Resamples: 500})
	if !reflect.DeepEqual(p, q) {
		t.Errorf("reversed input gave %+v; want %+v", q, p)
	}
}

func TestComparePairedRepeats(t *testing.T) {
	t.Parallel()
	var base, cand []Record
	for rep := 0; rep < 2; rep++ {
		b := mkRec("b", "t1", 10, OutcomeOK, true, 1)
		c := mkRec("c", "t1", 10, OutcomeOK, rep == 0, 1)
		b.Repeat, c.Repeat = rep, rep
		base, cand = append(base, b), append(cand, c)
	}
	p := comparePairedRecs(t, base, cand, PairOptions{ShowRepeat: true})
	if p.Pairs != 2 || !reflect.DeepEqual(p.Lost, []string{"t1#1"}) {
		t.Errorf("pairs %d, lost %v; want 2, [t1#1]", p.Pairs, p.Lost)
	}
}

func TestComparePairedNoOverlap(t *testing.T) {
	t.Parallel()
	p := comparePairedRecs(t, []Record{mkRec("b", "t1", 1, OutcomeOK, true, 1)}, []Record{mkRec("c", "t2", 1, OutcomeOK, true, 1)}, PairOptions{})
	if p.Pairs != 0 || p.LatencyDeltaMs != nil || p.CostDelta != nil || len(p.Unmatched) != 2 {
		t.Errorf("got pairs %d, latency %v, cost %v, unmatched %v; want 0, nil, nil, 2 ids", p.Pairs, p.LatencyDeltaMs, p.CostDelta, p.Unmatched)
	}
}

func BenchmarkComparePaired(b *testing.B) {
	var base, cand []Record
	for i := range 400 {
		base = append(base, mkRec("b", fmt.Sprint("t", i), float64(i%97), OutcomeOK, true, 1))
		cand = append(cand, mkRec("c", fmt.Sprint("t", i), float64(i%89), OutcomeOK, i%50 != 0, 0.5))
	}
	set := mustSet(b, append(base, cand...))
	var bs, cs []*records.Rec
	set.Each(func(r *records.Rec) {
		if set.Symbols().Str(r.Arm) == "b" {
			bs = append(bs, r)
		} else {
			cs = append(cs, r)
		}
	})
	b.ReportAllocs()
	for b.Loop() {
		comparePaired(set.Symbols(), bs, cs, PairOptions{Seed: 1})
	}
}
