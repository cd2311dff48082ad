package analysis

import (
	"fmt"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

func TestBinomialBounds(t *testing.T) {
	t.Parallel()
	cases := []struct {
		n      int
		q      float64
		lo, hi int
	}{
		{6, 0.5, 1, 6},     // P[X=0] = P[X=6] = 1/64: coverage 96.9%
		{6, 0.95, 4, 7},    // no upper bound from 6 samples
		{20, 0.5, 6, 15},   // the textbook interval for a median of 20
		{100, 0.5, 40, 61}, // ditto for 100
		{1, 0.5, 0, 2},     // nothing can be bounded from one sample
	}
	for _, tc := range cases {
		lo, hi := binomialBounds(tc.n, tc.q)
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("n=%d q=%v: got ranks [%d, %d]; want [%d, %d]", tc.n, tc.q, lo, hi, tc.lo, tc.hi)
		}
	}
	// The normal approximation used above 10,000 samples agrees with the
	// exact computation at the switch to within a rank or two.
	elo, ehi := binomialBounds(exactBinomialMaxN, 0.95)
	m, sd := float64(exactBinomialMaxN)*0.95, 21.794494717703369 // sqrt(10000·0.95·0.05)
	alo, ahi := int(m-1.959964*sd), int(m+1.959964*sd)+2
	if d := elo - alo; d < -2 || d > 2 {
		t.Errorf("exact lower rank %d vs normal %d", elo, alo)
	}
	if d := ehi - ahi; d < -2 || d > 2 {
		t.Errorf("exact upper rank %d vs normal %d", ehi, ahi)
	}
}

func TestUncertainty(t *testing.T) {
	t.Parallel()
	var in []Record
	for rep := 0; rep < 3; rep++ {
		for i := 0; i < 100; i++ {
			in = append(in, Record{Arm: "a", TaskID: fmt.Sprint("t", i), Outcome: OutcomeOK, Repeat: rep, E2EMs: float64(i + 1 + 10*rep), Cost: 1, Pass: i%4 != 0})
		}
	}
	set := mustSet(t, in)
	var recs []*records.Rec
	set.Each(func(r *records.Rec) { recs = append(recs, r) })
	syms := set.Symbols()
	u := uncertainty(syms, recs, 1)
	if u.P50CI.Lo == nil || u.P50CI.Hi == nil || *u.P50CI.Lo > 60 || *u.P50CI.Hi < 60 {
		t.Errorf("p50 interval %+v; want it to contain 60", u.P50CI)
	}
	// 300 cost over 225 passes = 1.333
	if u.CostPerPassCI.Lo == nil || *u.CostPerPassCI.Lo > 1.333 || *u.CostPerPassCI.Hi < 1.334 || *u.CostPerPassCI.Hi > 1.6 {
		t.Errorf("cost per pass interval %+v; want a narrow interval around 1.333", u.CostPerPassCI)
	}
	again := uncertainty(syms, recs, 1)
	if *again.CostPerPassCI.Lo != *u.CostPerPassCI.Lo || *again.CostPerPassCI.Hi != *u.CostPerPassCI.Hi {
		t.Error("cost interval differs for the same seed")
	}
	if u.Repeats == nil || u.Repeats.N != 3 || u.Repeats.P50.Min != 50 || u.Repeats.P50.Median != 60 || u.Repeats.P50.Max != 70 {
		t.Errorf("repeat spread %+v; want 3 repeats, p50 50/60/70", u.Repeats)
	}
	one := mustSet(t, []Record{{Arm: "a", TaskID: "t", Outcome: OutcomeError, E2EMs: 5, Cost: 1}})
	var first []*records.Rec
	one.Each(func(r *records.Rec) { first = append(first, r) })
	none := uncertainty(one.Symbols(), first, 1)
	if none.CostPerPassCI.Lo != nil || none.P50CI.Lo != nil {
		t.Errorf("one failed request: got %+v and %+v; want unbounded intervals", none.P50CI, none.CostPerPassCI)
	}
}
