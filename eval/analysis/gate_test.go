package analysis

import (
	"fmt"
	"strings"
	"testing"
)

// gateArms builds a baseline passing t1..t4 (100 ms, cost 10 each) and a
// candidate from passes and a tweak.
func gateArms(candPass []bool, candLat float64, tweak func(recs []Record) []Record) []Record {
	var recs []Record
	for i := range 4 {
		recs = append(recs, mkRec("baseline", fmt.Sprint("t", i+1), 100, OutcomeOK, true, 10))
	}
	var cand []Record
	for i, p := range candPass {
		out := OutcomeOK
		if !p {
			out = OutcomeError
		}
		cand = append(cand, mkRec("cand", fmt.Sprint("t", i+1), candLat+float64(i), out, p, 5))
	}
	if tweak != nil {
		cand = tweak(cand)
	}
	return append(recs, cand...)
}

func TestGate(t *testing.T) {
	t.Parallel()
	all := []bool{true, true, true, true}
	tests := []struct {
		name        string
		recs        []Record
		wantVerdict string
		wantReasons []string // substrings, each in some reason
		wantChange  string   // substring of WhatWouldChange
		gate        *GateConfig
	}{
		{
			name:        "fewer passes",
			recs:        gateArms([]bool{true, false, true, true}, 50, nil),
			wantVerdict: VerdictReject,
			wantReasons: []string{"loses 1 passing task: t2", "passes 3 of 4 vs 4 of 4", "not rescued by speed or cost"},
			wantChange:  "1 more passing task",
		},
		{
			name: "equal passes on different tasks",
			recs: func() []Record {
				r := gateArms([]bool{false, true, true, true}, 50, nil)
				r[3] = mkRec("baseline", "t4", 100, OutcomeError, false, 10) // baseline fails t4, candidate passes it
				return r
			}(),
			wantVerdict: VerdictAccept,
			wantReasons: []string{"as many as the baseline, but on different tasks", "loses t1", "gains t4"},
			wantChange:  "1 more failed task rejects cand",
		},
		{
			name: "a leak",
			recs: gateArms(all, 50, func(r []Record) []Record {
				r[0].Cache, r[0].Leak = "hit", "stale"
				return r
			}),
			wantVerdict: VerdictReject,
			wantReasons: []string{"leaks: 1 cache hit served from another scope (stale 1)"},
			wantChange:  "no leaking cache hits",
		},
		{
			name: "a silent violation",
			recs: gateArms(all, 50, func(r []Record) []Record {
				r[2].ContractOK = false
				return r
			}),
			wantVerdict: VerdictReject,
			wantReasons: []string{"lets invalid answers through: 1 answer recorded ok"},
			wantChange:  "no invalid answers recorded ok",
		},
		{
			name: "semantic false hits",
			recs: gateArms(all, 50, func(r []Record) []Record {
				for i := range r {
					r[i].Cache, r[i].Similarity = "hit", 0.93
				}
				r[1].FalseHit = true
				return r
			}),
			wantVerdict: VerdictReject,
			wantReasons: []string{"false hits: 1 of 4 similarity hits served another task's answer wrongly"},
			wantChange:  "false hits per similarity hit at most 5%",
		},
		{
			name: "semantic hits under a loose limit",
			recs: gateArms(all, 50, func(r []Record) []Record {
				for i := range r {
					r[i].Cache, r[i].Similarity = "hit", 0.93
				}
				return r
			}),
			gate:        &GateConfig{Rule: RuleNet, MaxFalseHitRate: f64p(0.6)},
			wantVerdict: VerdictAccept,
			wantChange:  "so would any leaking cache hit, any invalid answer recorded ok, false hits above 60% of similarity hits, with a 95% upper bound above it too, or a run",
		},
		{
			name: "unmatched tasks",
			recs: gateArms(all, 50, func(r []Record) []Record {
				return append(r, mkRec("cand", "t9", 1, OutcomeOK, true, 1))
			}),
			wantVerdict: VerdictReject,
			wantReasons: []string{"ran different work: 1 task on one side only: t9"},
			wantChange:  "the same tasks as the baseline",
		},
		{
			name:        "same passes, faster and cheaper",
			recs:        gateArms(all, 50, nil),
			wantVerdict: VerdictAccept,
			wantReasons: []string{"on the same tasks", "faster: p95 53 vs 100 ms", "cheaper: cost per pass 5.00 vs 10.00"},
			wantChange:  "1 more failed task rejects cand",
		},
		{
			name: "no clear latency difference",
			recs: gateArms(all, 0, func(r []Record) []Record {
				for i, v := range []float64{60, 140, 90, 110} {
					r[i].E2EMs = v
				}
				return r
			}),
			gate:        &GateConfig{Rule: RuleNet, P95RegressPct: f64p(1000)},
			wantVerdict: VerdictAccept,
			wantReasons: []string{"no clear latency difference", "includes 0"},
		},
		{
			name: "a broken guardrail",
			recs: gateArms(all, 0, func(r []Record) []Record {
				for i, v := range []float64{130, 140, 135, 138} {
					r[i].E2EMs = v
				}
				return r
			}),
			wantVerdict: VerdictReject,
			wantReasons: []string{"breaks a guardrail: p95 140 vs 100 ms (+40%), beyond the +10% allowed"},
			wantChange:  "would pass the gate with p95 within the guardrails", // the default gate has no TTFT guardrail to name
		},
		{
			// One slow task makes the p95: its paired interval reaches
			// back within the limit, so the data cannot say the
			// guardrail is broken.
			name: "a guardrail the data cannot decide",
			recs: gateArms(all, 0, func(r []Record) []Record {
				for i, v := range []float64{60, 140, 90, 110} {
					r[i].E2EMs = v
				}
				return r
			}),
			wantVerdict: VerdictInconclusive,
			wantReasons: []string{"p95 140 vs 100 ms (+40%) is beyond the +10% allowed, but its paired 95% interval"},
			wantChange:  "a comparison the data can carry",
		},
		{
			name: "no gain",
			recs: gateArms(all, 0, func(r []Record) []Record {
				for i, v := range []float64{60, 100, 90, 110} {
					r[i].E2EMs, r[i].Cost = v, 10
				}
				return r
			}),
			gate:        &GateConfig{Rule: RuleNet, Objective: ObjectiveLatency},
			wantVerdict: VerdictNoGain,
			wantReasons: []string{"no gain: passes the gate, but per-task latency does not improve", "no clear latency difference"},
			wantChange:  "accepted with an improvement of per-task latency",
		},
		{
			name: "the baseline passes nothing",
			recs: func() []Record {
				r := gateArms(all, 50, nil)
				for i := range 4 {
					r[i] = mkRec("baseline", fmt.Sprint("t", i+1), 100, OutcomeError, false, 10)
				}
				return r
			}(),
			wantVerdict: VerdictInconclusive,
			wantReasons: []string{"the baseline passes nothing"},
		},
		{
			name: "rule any rejects a loss however much is gained",
			recs: func() []Record {
				r := gateArms([]bool{false, true, true, true}, 50, nil)
				r[3] = mkRec("baseline", "t4", 100, OutcomeError, false, 10)
				return r
			}(),
			gate:        &GateConfig{Rule: RuleAny},
			wantVerdict: VerdictReject,
			wantReasons: []string{"loses 1 passing task: t1, gains 1: t4; lost to error 1"},
		},
		{
			name: "more passes than the baseline",
			recs: func() []Record {
				r := gateArms(all, 50, nil)
				r[0] = mkRec("baseline", "t1", 100, OutcomeTimeout, false, 10)
				return r
			}(),
			wantVerdict: VerdictAccept,
			wantReasons: []string{"passes 4 of 4 vs 3 of 4 for the baseline: gains t1"},
			wantChange:  "2 more failed tasks reject cand",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := tt.gate
			if g == nil {
				g = netGate() // four tasks whose outcomes are the same on every call
			}
			s, err := summarizeRecs(tt.recs, Options{Seed: 1, Resamples: 500, Gate: g})
			if err != nil {
				t.Fatal(err)
			}
			a := armByName(t, s, "cand")
			if a.Verdict != tt.wantVerdict {
				t.Errorf("verdict = %q; want %q (reasons %q)", a.Verdict, tt.wantVerdict, a.Reasons)
			}
			joined := strings.Join(a.Reasons, "\n")
			for _, w := range tt.wantReasons {
				if !strings.Contains(joined, w) {
					t.Errorf("reasons %q; want one containing %q", a.Reasons, w)
				}
			}
			if got := s.Decision.WhatWouldChange["cand"]; !strings.Contains(got, tt.wantChange) {
				t.Errorf("what would change = %q; want it to contain %q", got, tt.wantChange)
			}
			list := map[string][]string{VerdictAccept: s.Decision.Accepted, VerdictReject: s.Decision.Rejected,
				VerdictNoGain: s.Decision.NoGain, VerdictInconclusive: s.Decision.Inconclusive, VerdictIncomplete: s.Decision.Incomplete}[tt.wantVerdict]
			if len(list) != 1 || list[0] != "cand" {
				t.Errorf("decision lists %v for %s; want [cand]", list, tt.wantVerdict)
			}
		})
	}
}

func TestGateDirect(t *testing.T) {
	t.Parallel()
	base := &ArmSummary{Name: "b", N: 2, Pass: 2}
	cand := &ArmSummary{Name: "c", N: 2, Pass: 2, Paired: &Paired{}}
	in := gateInput{g: GateConfig{Rule: RuleNet}.Defaults()}
	if got, _ := qualityFail(base, cand, in); got != "" {
		t.Errorf("an equal candidate fails the gate: %q; want no failure", got)
	}
	cand.Pass = 1
	if got, _ := qualityFail(base, cand, in); !strings.Contains(got, "passes fewer tasks than the baseline") {
		t.Errorf("fewer passes and no lost ids: %q; want the fewer-passes failure", got)
	}
}

func TestDecisionWarnings(t *testing.T) {
	t.Parallel()
	recs := gateArms([]bool{true, true, true, true}, 50, func(r []Record) []Record {
		r[3].Outcome, r[3].Pass = OutcomeError, false
		return r
	})
	s, err := summarizeRecs(recs, Options{Gate: netGate()})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(s.Decision.Warnings, "\n")
	for _, w := range []string{
		"p90, p95 and p99 of 4 requests are the sample maximum",
		"rest on 4 pairs",
		"not statistically clear (McNemar p = 1)",
	} {
		if !strings.Contains(joined, w) {
			t.Errorf("warnings %q; want one containing %q", s.Decision.Warnings, w)
		}
	}
	// A cancelled request: the run was interrupted, the verdict incomplete.
	cancelled := gateArms([]bool{true, true, true, true}, 50, func(r []Record) []Record {
		r[3].Outcome, r[3].Pass = OutcomeCancelled, false
		return r
	})
	if s, err = summarizeRecs(cancelled, Options{}); err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(s.Decision.Warnings, "\n"); !strings.Contains(w, "cand: 1 request cancelled") {
		t.Errorf("warnings %q; want the cancelled request named", s.Decision.Warnings)
	}
	if v := s.Arms[1].Verdict; v != VerdictIncomplete {
		t.Errorf("verdict with a cancelled request = %s; want %s", v, VerdictIncomplete)
	}
	// Counted apart: in n, not in latency.
	if a := s.Arms[1]; a.N != 4 || a.Cancelled != 1 || a.MaxMs != 52 {
		t.Errorf("cand n %d, cancelled %d, max %v ms; want 4, 1 and the max of the three measured (52)", a.N, a.Cancelled, a.MaxMs)
	}
	// 20 requests: p95 is the 19th value, only p99 is the maximum.
	var many []Record
	for i := range 20 {
		many = append(many, mkRec("baseline", fmt.Sprint("t", i), float64(i), OutcomeOK, true, 1))
	}
	s, err = summarizeRecs(many, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Arms[0].TailNote, "p99 of 20 requests is the sample maximum; it cannot be extrapolated"; got != want {
		t.Errorf("tail note = %q; want %q", got, want)
	}
	if got := s.Decision.Summary; !strings.Contains(got, "nothing to compare") {
		t.Errorf("summary with one arm = %q; want it to say there is nothing to compare", got)
	}
}

// An A/A control that is not no_gain says the backend cannot tell
// identical arms apart: the run is flagged and no candidate is accepted,
// however clearly it improves.
func TestTwinControl(t *testing.T) {
	t.Parallel()
	mk := func(twinLat float64) []Record {
		var recs []Record
		for i := range 240 { // enough for rule margin to bound a loss no task shows
			id := fmt.Sprint("t", i)
			recs = append(recs,
				mkRec("baseline", id, 100+float64(i%5), OutcomeOK, true, 10),
				mkRec("twin", id, twinLat+float64(i%5), OutcomeOK, true, 10),
				mkRec("fast", id, 50+float64(i%5), OutcomeOK, true, 10))
		}
		return recs
	}
	for _, tc := range []struct {
		name          string
		twinLat       float64
		twin, fast    string
		miscalibrated bool
	}{
		{"twin level", 100, VerdictNoGain, VerdictAccept, false},
		{"twin faster", 60, VerdictAccept, VerdictInconclusive, true},
	} {
		s, err := summarizeRecs(mk(tc.twinLat), Options{Gate: &GateConfig{Control: "twin"}})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, a := range s.Arms {
			got[a.Name] = a.Verdict
		}
		if got["twin"] != tc.twin || got["fast"] != tc.fast || (s.Decision.Miscalibrated != "") != tc.miscalibrated {
			t.Errorf("%s: twin %s, fast %s, miscalibrated %q; want %s, %s, %v", tc.name, got["twin"], got["fast"], s.Decision.Miscalibrated, tc.twin, tc.fast, tc.miscalibrated)
		}
	}
}

// Figures at a limit decide at their decimal value: cost per pass 1.1
// against 1.0 is at the +10% guardrail, not beyond it, and a sentence that
// compares a figure with a limit prints the digits that show the side.
func TestLimitsDecideAtExactValues(t *testing.T) {
	t.Parallel()
	mk := func(candCost float64) []Record {
		var recs []Record
		for i := range 10 {
			id := fmt.Sprint("t", i)
			recs = append(recs, mkRec("baseline", id, 100, OutcomeOK, true, 1.0), mkRec("cand", id, 50, OutcomeOK, true, candCost))
		}
		return recs
	}
	s, err := summarizeRecs(mk(1.1), Options{Gate: netGate()})
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Arms[1].Verdict; v != VerdictAccept {
		t.Errorf("cost per pass 1.1 vs 1.0 at +10%%: verdict %s (%q); want accept", v, s.Arms[1].Reasons)
	}
	s, err = summarizeRecs(mk(1.1004), Options{Gate: netGate()})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range s.Arms[1].Reasons {
		found = found || strings.Contains(r, "(+10.04%), beyond the +10% allowed")
	}
	if s.Arms[1].Verdict != VerdictReject || !found {
		t.Errorf("cost per pass 1.1004 vs 1.0: %s %q; want reject naming +10.04%%", s.Arms[1].Verdict, s.Arms[1].Reasons)
	}
}

// A rework cost per task that does not pass is in the arm's cost and cost
// per pass: a cheap arm that fails more pays for the people redoing its
// failures, and can lose its cost advantage to them.
func TestRework(t *testing.T) {
	t.Parallel()
	var recs []Record
	for i := range 20 {
		id := fmt.Sprint("t", i)
		recs = append(recs, mkRec("baseline", id, 100, OutcomeOK, true, 10), mkRec("cheap", id, 100, OutcomeOK, i >= 2, 2))
	}
	g := GateConfig{Rule: RuleAny, MaxLost: 2, Objective: ObjectiveCost}
	s, err := summarizeRecs(recs, Options{Gate: &g})
	if err != nil {
		t.Fatal(err)
	}
	if v := s.Arms[1].Verdict; v != VerdictAccept || s.Arms[1].Rework != nil {
		t.Fatalf("without rework: %s, rework %+v; want accept and no rework figures", v, s.Arms[1].Rework)
	}
	g.Rework = &Rework{CostPerTask: 100, MinutesPerTask: 15, Causes: map[string]ReworkRate{"timeout": {Cost: 1}}}
	s, err = summarizeRecs(recs, Options{Gate: &g})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	if a.Rework == nil || a.Rework.Tasks != 2 || a.Rework.Cost != 200 || a.Rework.Minutes != 30 || a.Cost != 240 {
		t.Errorf("rework %+v, cost %v; want 2 tasks, 200 and 30 minutes, cost 40 + 200", a.Rework, a.Cost)
	}
	if a.Verdict == VerdictAccept || *a.CostPerPass != 240.0/18 {
		t.Errorf("with rework: %s, cost per pass %v; want no accept at %v", a.Verdict, *a.CostPerPass, 240.0/18)
	}
	if f, _ := (&Rework{CostPerTask: -1}).Check(); f != "cost_per_task" {
		t.Errorf("a negative cost: field %q; want cost_per_task", f)
	}
	if f, _ := (&Rework{Causes: map[string]ReworkRate{"typo": {}}}).Check(); f != "causes.typo" {
		t.Errorf("an unknown cause: field %q; want causes.typo", f)
	}
}
