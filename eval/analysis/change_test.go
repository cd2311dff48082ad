package analysis

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"
)

// The "what would change the decision" lines are exact: on generated cases
// under every gate rule, applying the stated edit to the records flips the
// verdict, and one task less does not.
func TestWhatWouldChangeIsExact(t *testing.T) {
	t.Parallel()
	failRe := regexp.MustCompile(`^(\d+) more failed tasks? rejects? (\S+); `)
	passRe := regexp.MustCompile(`^(\S+) would pass the gate with (\d+) more passing tasks?$`)
	gates := []GateConfig{
		{Rule: RuleNet},
		{Rule: RuleAny},
		{Rule: RuleAny, MaxLost: 2},
		{Rule: RuleNet, MaxLost: 3},
		{Rule: RuleNet, CostPerPassRegressPct: f64p(0)},
		{Objective: ObjectiveCost, MarginPP: f64p(20)},
		{MarginPP: f64p(10)},
		{MarginPP: f64p(30), CostPerPassRegressPct: f64p(0)},
	}
	checked := map[string]int{}
	for c := range 240 {
		rng := rand.New(rand.NewPCG(uint64(c), 7))
		n := 10 + rng.IntN(40)
		recs := changeCase(rng, n)
		g := gates[c%len(gates)]
		verdictOf := func(recs []Record) string {
			s, err := summarizeRecs(recs, Options{Gate: &g})
			if err != nil {
				t.Fatal(err)
			}
			return s.Arms[1].Verdict
		}
		s, err := summarizeRecs(recs, Options{Gate: &g})
		if err != nil {
			t.Fatal(err)
		}
		line := s.Decision.WhatWouldChange["cand"]
		if m := failRe.FindStringSubmatch(line); m != nil {
			k, _ := strconv.Atoi(m[1])
			if got := verdictOf(editFail(recs, k)); got != VerdictReject {
				t.Errorf("case %d (%+v): %q, but failing %d more leaves %s", c, g, line, k, got)
			}
			if got := verdictOf(editFail(recs, k-1)); k > 1 && got == VerdictReject {
				t.Errorf("case %d (%+v): %q, but %d already rejects", c, g, line, k-1)
			}
			checked["fail"]++
		}
		if m := passRe.FindStringSubmatch(line); m != nil {
			k, _ := strconv.Atoi(m[2])
			if got := verdictOf(editPass(recs, k)); got == VerdictReject {
				t.Errorf("case %d (%+v): %q, but passing %d more is still rejected", c, g, line, k)
			}
			if got := verdictOf(editPass(recs, k-1)); k > 1 && got != VerdictReject {
				t.Errorf("case %d (%+v): %q, but %d already is %s", c, g, line, k-1, got)
			}
			checked["pass"]++
		}
	}
	if checked["fail"] < 40 || checked["pass"] < 40 {
		t.Errorf("checked %v lines; want at least 40 of each kind (the generator no longer makes both)", checked)
	}
}

// changeCase is a baseline and a candidate over n tasks: each passes most
// tasks, fails the others with a wrong answer (ok outcome, so an edit can
// flip a pass without changing outcomes), at latencies and costs that
// differ by a random factor.
func changeCase(rng *rand.Rand, n int) []Record {
	var recs []Record
	bp := 0.6 + 0.3*rng.Float64()
	cp := bp + 0.3*rng.Float64() - 0.1
	lat, cost := 0.5+rng.Float64(), 0.6+0.8*rng.Float64()
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		b := 100 + 20*rng.Float64()
		recs = append(recs, mkRec("baseline", id, b, OutcomeOK, rng.Float64() < bp, 10))
	}
	for i := range n {
		id := fmt.Sprintf("t%02d", i)
		recs = append(recs, mkRec("cand", id, recs[i].E2EMs*lat*(0.9+0.2*rng.Float64()), OutcomeOK, rng.Float64() < cp, 10*cost))
	}
	return recs
}

// editFail fails k of the candidate's passing tasks, first those the
// baseline passes too, then the ones it gained.
func editFail(recs []Record, k int) []Record {
	out := append([]Record(nil), recs...)
	n := len(recs) / 2
	for _, both := range []bool{true, false} {
		for i := range n {
			c := &out[n+i]
			if k > 0 && c.Pass && out[i].Pass == both {
				c.Pass = false
				k--
			}
		}
	}
	return out
}

// editPass passes k of the candidate's failing tasks, first those it lost,
// then the ones neither side passes.
func editPass(recs []Record, k int) []Record {
	out := append([]Record(nil), recs...)
	n := len(recs) / 2
	for _, lost := range []bool{true, false} {
		for i := range n {
			c := &out[n+i]
			if k > 0 && !c.Pass && out[i].Pass == lost {
				c.Pass = true
				k--
			}
		}
	}
	return out
}
