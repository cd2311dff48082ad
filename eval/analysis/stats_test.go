package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/internal/figure"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/internal/quantile"
)

func armByName(t *testing.T, s *Summary, name string) *ArmSummary {
	t.Helper()
	for i := range s.Arms {
		if s.Arms[i].Name == name {
			return &s.Arms[i]
		}
	}
	t.Fatalf("arm %q not in summary", name)
	return nil
}

func TestPercentileNR(t *testing.T) {
	t.Parallel()
	// values 1..n, so the percentile equals its nearest rank
	tests := []struct {
		n    int
		q    float64
		want int
	}{
		{1, 0, 1}, {1, 50, 1}, {1, 95, 1}, {1, 99, 1}, {1, 100, 1},
		{6, 0, 1}, {6, 50, 3}, {6, 90, 6}, {6, 95, 6}, {6, 99, 6}, {6, 100, 6},
		{20, 0, 1}, {20, 50, 10}, {20, 90, 18}, {20, 95, 19}, {20, 99, 20}, {20, 100, 20},
		{200, 0, 1}, {200, 50, 100}, {200, 95, 190}, {200, 99, 198}, {200, 100, 200},
		{1000, 99.9, 999}, {1000, 99.99, 1000}, {3, 33.33, 1}, {3, 33.34, 2},
		{10, -5, 1}, {10, 150, 10},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("n=%d/p%v", tt.n, tt.q), func(t *testing.T) {
			t.Parallel()
			x := make([]float64, tt.n)
			for i := range x {
				x[i] = float64(i + 1)
			}
			if got := quantile.NearestRank(x, tt.q); got != float64(tt.want) {
				t.Errorf("PercentileNR(1..%d, %v) = %v; want %d", tt.n, tt.q, got, tt.want)
			}
			if got, want := quantile.TailIsMax(tt.n, tt.q), tt.want == tt.n; got != want {
				t.Errorf("TailIsMax(%d, %v) = %v; want %v", tt.n, tt.q, got, want)
			}
		})
	}
}

func TestPercentileNRDegenerate(t *testing.T) {
	t.Parallel()
	if got := quantile.NearestRank(nil, 50); !math.IsNaN(got) {
		t.Errorf("PercentileNR(nil, 50) = %v; want NaN", got)
	}
	if got := quantile.NearestRank([]float64{1, 2}, math.NaN()); !math.IsNaN(got) {
		t.Errorf("PercentileNR(x, NaN) = %v; want NaN", got)
	}
	if quantile.TailIsMax(0, 95) {
		t.Error("TailIsMax(0, 95) = true; want false")
	}
	if quantile.TailIsMax(5, math.NaN()) {
		t.Error("TailIsMax(5, NaN) = true; want false")
	}
}

func TestSummarizeExercise(t *testing.T) {
	t.Parallel()
	s, err := Summarize(exerciseSet(t), Options{Gate: netGate()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Baseline != "baseline" {
		t.Errorf("baseline = %q; want baseline", s.Baseline)
	}
	tests := []struct {
		arm                  string
		pass, n              int
		cost, p95, costPerPs float64
		verdict              string
	}{
		{"baseline", 6, 6, 120, 900, 20.00, VerdictBaseline},
		{"candidate_a", 5, 6, 80, 300, 16.00, VerdictReject},
		{"candidate_b", 6, 6, 100, 500, 100.0 / 6, VerdictAccept},
	}
	for i, tt := range tests {
		a := &s.Arms[i]
		if a.Name != tt.arm {
			t.Fatalf("arm %d = %q; want %q", i, a.Name, tt.arm)
		}
		if a.Pass != tt.pass || a.N != tt.n {
			t.Errorf("%s pass = %d/%d; want %d/%d", tt.arm, a.Pass, a.N, tt.pass, tt.n)
		}
		if a.Cost != tt.cost {
			t.Errorf("%s cost = %v; want %v", tt.arm, a.Cost, tt.cost)
		}
		if a.P95Ms != tt.p95 {
			t.Errorf("%s p95 = %v; want %v", tt.arm, a.P95Ms, tt.p95)
		}
		if a.CostPerPass == nil || *a.CostPerPass != tt.costPerPs {
			t.Errorf("%s cost_per_pass = %v; want %v", tt.arm, a.CostPerPass, tt.costPerPs)
		}
		if got := figure.CostPerPass(a.CostPerPass); got != fmt.Sprintf("%.2f", tt.costPerPs) {
			t.Errorf("%s cost per pass printed %q; want %.2f", tt.arm, got, tt.costPerPs)
		}
		if a.Verdict != tt.verdict {
			t.Errorf("%s verdict = %q; want %q", tt.arm, a.Verdict, tt.verdict)
		}
		if !strings.Contains(a.TailNote, "p95") {
			t.Errorf("%s tail_note = %q; want it to name p95 as the maximum", tt.arm, a.TailNote)
		}
	}
	a := armByName(t, s, "candidate_a")
	if len(a.Reasons) == 0 || !strings.Contains(a.Reasons[0], "loses 1 passing task: t6") {
		t.Errorf("candidate_a reasons = %q; want the first to say it loses 1 passing task: t6", a.Reasons)
	}
	if got := s.Decision.Accepted; len(got) != 1 || got[0] != "candidate_b" {
		t.Errorf("accepted = %v; want [candidate_b]", got)
	}
	if got := s.Decision.Rejected; len(got) != 1 || got[0] != "candidate_a" {
		t.Errorf("rejected = %v; want [candidate_a]", got)
	}
	found := false
	for _, w := range s.Decision.Warnings {
		if strings.Contains(w, "p95") && strings.Contains(w, "of 6 requests") && strings.Contains(w, "maximum") {
			found = true
		}
	}
	if !found {
		t.Errorf("warnings = %q; want one saying p95 of 6 requests is the maximum", s.Decision.Warnings)
	}
	if got := s.Decision.WhatWouldChange["candidate_b"]; !strings.HasPrefix(got, "1 more failed task rejects candidate_b") {
		t.Errorf("what would change candidate_b = %q; want it to start with \"1 more failed task rejects candidate_b\"", got)
	}
	if got := s.Decision.WhatWouldChange["candidate_a"]; !strings.Contains(got, "1 more passing task") {
		t.Errorf("what would change candidate_a = %q; want \"1 more passing task\"", got)
	}
}

func TestSummarizeCountsFailures(t *testing.T) {
	t.Parallel()
	recs := []Record{
		mkRec("baseline", "t1", 100, OutcomeOK, true, 10),
		mkRec("baseline", "t2", 110, OutcomeOK, true, 10),
		mkRec("baseline", "t3", 5000, OutcomeTimeout, false, 10),
		mkRec("baseline", "t4", 50, OutcomeError, false, 4),
		mkRec("baseline", "t5", 300, OutcomeContractFail, false, 6),
	}
	recs[2].Attempts, recs[0].Attempts = 3, 1
	s, err := summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &s.Arms[0]
	checks := []struct {
		name      string
		got, want float64
	}{
		{"n", float64(a.N), 5},
		{"ok", float64(a.OK), 2},
		{"failed", float64(a.Failed), 3},
		{"timeouts", float64(a.Timeouts), 1},
		{"pass", float64(a.Pass), 2},
		{"p50 (rank 3 of 50,100,110,300,5000)", a.P50Ms, 110},
		{"p95 (the timed-out request)", a.P95Ms, 5000},
		{"max", a.MaxMs, 5000},
		{"min", a.MinMs, 50},
		{"mean", a.MeanMs, 1112},
		{"ok_p95", *a.OKP95Ms, 110},
		{"ok_mean", *a.OKMeanMs, 105},
		{"cost (failed requests included)", a.Cost, 40},
		{"cost_per_pass (40 / 2)", *a.CostPerPass, 20},
		{"attempts", float64(a.Attempts), 4},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v; want %v", c.name, c.got, c.want)
		}
	}
	wantOutcomes := map[string]int{OutcomeOK: 2, OutcomeTimeout: 1, OutcomeError: 1, OutcomeContractFail: 1}
	if fmt.Sprint(a.Outcomes) != fmt.Sprint(wantOutcomes) {
		t.Errorf("outcomes = %v; want %v", a.Outcomes, wantOutcomes)
	}
}

func TestSummarizeNoPassNoOK(t *testing.T) {
	t.Parallel()
	recs := []Record{mkRec("only", "t1", 10, OutcomeTimeout, false, 3)}
	s, err := summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &s.Arms[0]
	if a.CostPerPass != nil {
		t.Errorf("cost_per_pass = %v; want nil with no pass", *a.CostPerPass)
	}
	if a.OKP50Ms != nil || a.OKMeanMs != nil {
		t.Errorf("ok figures set with no ok request: %v %v", a.OKP50Ms, a.OKMeanMs)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if !strings.Contains(string(b), `"cost_per_pass":null`) || strings.Contains(string(b), "ok_p50_ms") {
		t.Errorf("JSON %s; want cost_per_pass null and no ok_p50_ms", b)
	}
}

func TestSummarizeWarmupAndRepeats(t *testing.T) {
	t.Parallel()
	var recs []Record
	for rep := 0; rep < 3; rep++ {
		w := mkRec("baseline", "t0", 99999, OutcomeOK, true, 100)
		w.Repeat, w.Warmup = rep, true
		recs = append(recs, w)
		for _, id := range []string{"t1", "t2"} {
			r := mkRec("baseline", id, 10, OutcomeOK, true, 1)
			r.Repeat = rep
			recs = append(recs, r)
		}
	}
	s, err := summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a := &s.Arms[0]
	if a.N != 6 || a.Warmup != 3 {
		t.Errorf("n = %d, warmup = %d; want 6 and 3", a.N, a.Warmup)
	}
	if a.MaxMs != 10 || a.Cost != 6 {
		t.Errorf("max = %v, cost = %v; want 10 and 6 (warm-up excluded)", a.MaxMs, a.Cost)
	}
}

func TestSummarizeBaselineChoice(t *testing.T) {
	t.Parallel()
	recs := []Record{
		mkRec("fast", "t1", 10, OutcomeOK, true, 1),
		mkRec("baseline", "t1", 20, OutcomeOK, true, 1),
		mkRec("other", "t1", 30, OutcomeOK, true, 1),
	}
	noBase := []Record{recs[0], recs[2]}
	tests := []struct {
		name      string
		recs      []Record
		baseline  string
		wantOrder string
		wantErr   error
	}{
		{"named baseline wins", recs, "", "baseline,fast,other", nil},
		{"first arm without one", noBase, "", "fast,other", nil},
		{"explicit", recs, "other", "other,fast,baseline", nil},
		{"unknown", recs, "nope", "", ErrUnknownBaseline},
		{"empty", nil, "", "", records.ErrBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := summarizeRecs(tt.recs, Options{Baseline: tt.baseline})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v; want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var names []string
			for _, a := range s.Arms {
				names = append(names, a.Name)
			}
			if got := strings.Join(names, ","); got != tt.wantOrder {
				t.Errorf("arms = %s; want %s", got, tt.wantOrder)
			}
			if s.Arms[0].Verdict != VerdictBaseline {
				t.Errorf("first arm verdict = %q; want baseline", s.Arms[0].Verdict)
			}
		})
	}
}

func TestSummarizeRejectsBadSets(t *testing.T) {
	t.Parallel()
	w := mkRec("warm", "t1", 1, OutcomeOK, true, 1)
	w.Warmup = true
	tests := []struct {
		name string
		recs []Record
		want error
	}{
		{"duplicate", []Record{mkRec("a", "t1", 1, OutcomeOK, true, 1), mkRec("a", "t1", 2, OutcomeOK, true, 1)}, records.ErrBadInput},
		{"arm of warm-up only", []Record{mkRec("a", "t1", 1, OutcomeOK, true, 1), w}, ErrNoRecords},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := summarizeRecs(tt.recs, Options{}); !errors.Is(err, tt.want) {
				t.Errorf("err = %v; want %v", err, tt.want)
			}
		})
	}
}

func TestSummarizeCacheAndRouting(t *testing.T) {
	t.Parallel()
	var recs []Record
	add := func(r Record, f func(*Record)) {
		f(&r)
		recs = append(recs, r)
	}
	// baseline: no cache, no router
	for i := range 4 {
		add(mkRec("baseline", fmt.Sprint("t", i), 100, OutcomeOK, true, 10), func(*Record) {})
	}
	// cached arm: 2 hits (one leaking), 2 misses
	add(mkRec("cache", "t0", 10, OutcomeOK, true, 0), func(r *Record) { r.Cache = "hit" })
	add(mkRec("cache", "t1", 20, OutcomeOK, true, 0), func(r *Record) { r.Cache, r.Leak = "hit", "cross_tenant" })
	add(mkRec("cache", "t2", 100, OutcomeOK, true, 10), func(r *Record) { r.Cache = "miss" })
	add(mkRec("cache", "t3", 200, OutcomeOK, true, 10), func(r *Record) { r.Cache, r.ScopeMismatch = "miss", true })
	// routed arm
	add(mkRec("router", "t0", 50, OutcomeOK, true, 2), func(r *Record) { r.Routed, r.Model, r.RouteScore = true, "s", 0.1 })
	add(mkRec("router", "t1", 50, OutcomeOK, false, 2), func(r *Record) {
		r.Routed, r.Model, r.RouteScore, r.Misroute, r.ShadowCost = true, "s", 0.2, MisrouteUnder, 9
	})
	add(mkRec("router", "t2", 90, OutcomeOK, true, 10), func(r *Record) {
		r.Routed, r.Model, r.RouteScore, r.Misroute, r.ShadowCost = true, "L", 0.9, MisrouteOver, 2
	})
	add(mkRec("router", "t3", 90, OutcomeOK, true, 10), func(r *Record) {
		r.Routed, r.Model, r.RouteScore, r.Escalated, r.Attempts = true, "L", 0.05, true, 2
	})

	s, err := summarizeRecs(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b := armByName(t, s, "baseline"); b.CacheStats != nil || b.RouteStats != nil {
		t.Errorf("baseline has cache %v / route %v stats; want none", b.CacheStats, b.RouteStats)
	}
	c := armByName(t, s, "cache").CacheStats
	if c == nil {
		t.Fatal("cache arm has no cache stats")
	}
	if c.HitRate != 0.5 || c.Hits != 2 || c.CacheRequests != 4 {
		t.Errorf("hit rate %v (%d of %d); want 0.5 (2 of 4)", c.HitRate, c.Hits, c.CacheRequests)
	}
	if *c.HitP50Ms != 10 || *c.MissP50Ms != 100 || *c.SavedPerHit != 0.9 {
		t.Errorf("hit p50 %v, miss p50 %v, saved %v; want 10, 100, 0.9", *c.HitP50Ms, *c.MissP50Ms, *c.SavedPerHit)
	}
	if c.Leaks["cross_tenant"] != 1 || c.ScopeMismatches != 1 {
		t.Errorf("leaks %v, scope mismatches %d; want cross_tenant 1 and 1", c.Leaks, c.ScopeMismatches)
	}
	if v := armByName(t, s, "cache").Verdict; v != VerdictReject {
		t.Errorf("leaking cache verdict = %q; want reject", v)
	}

	ra := armByName(t, s, "router")
	r := ra.RouteStats
	if r == nil {
		t.Fatal("router arm has no route stats")
	}
	if r.Routed != 4 || r.Misroutes[MisrouteUnder] != 1 || r.Misroutes[MisrouteOver] != 1 || r.Misroutes[MisrouteHopeless] != 0 {
		t.Errorf("routed %d, misroutes %v; want 4, under 1 over 1 hopeless 0", r.Routed, r.Misroutes)
	}
	// L has the higher mean score among non-escalated requests: 2 of 4 routed went to it.
	if r.RoutedLargeShare == nil || *r.RoutedLargeShare != 0.5 {
		t.Errorf("routed_large_share = %v; want 0.5", r.RoutedLargeShare)
	}
	if ra.ShadowCost != 11 || ra.Cost != 24 {
		t.Errorf("shadow cost %v, cost %v; want 11 and 24 (shadow kept out of cost)", ra.ShadowCost, ra.Cost)
	}
	if ra.Escalated != 1 {
		t.Errorf("escalated = %d; want 1", ra.Escalated)
	}

	s2, err := summarizeRecs(recs, Options{LargeModels: []string{"XL"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := armByName(t, s2, "router").RoutedLargeShare; got == nil || *got != 0 {
		t.Errorf("routed_large_share with LargeModels [XL] = %v; want 0 (the option overrides the score rule)", got)
	}

	b, err := json.Marshal(armByName(t, s, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"hit_rate":0.5`, `"hit_p50_ms":10`, `"miss_p50_ms":100`, `"leaks":{"cross_tenant":1}`, `"saved_per_hit":0.9`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("cache arm JSON lacks %s: %s", k, b)
		}
	}
}

func TestArmSummaryJSONFields(t *testing.T) {
	t.Parallel()
	s, err := Summarize(exerciseSet(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Baseline string                       `json:"baseline"`
		Arms     []map[string]json.RawMessage `json:"arms"`
		Decision map[string]json.RawMessage   `json:"decision"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	// documented summary.json names.
	for _, k := range []string{"name", "n", "ok", "failed", "timeouts", "pass", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms",
		"ok_p50_ms", "ok_p95_ms", "ok_mean_ms", "cost", "cost_per_pass", "verdict", "reasons", "groups"} {
		if _, ok := raw.Arms[0][k]; !ok {
			t.Errorf("arm JSON lacks %q", k)
		}
	}
	for _, k := range []string{"lost", "gained", "mcnemar_p", "latency_delta_ms", "cost_delta", "pairs", "unmatched"} {
		var p map[string]json.RawMessage
		if err := json.Unmarshal(raw.Arms[1]["paired"], &p); err != nil {
			t.Fatalf("paired: %v", err)
		}
		if _, ok := p[k]; !ok {
			t.Errorf("paired JSON lacks %q", k)
		}
	}
	if _, ok := raw.Arms[0]["paired"]; ok {
		t.Error("baseline has a paired object; want none")
	}
	if _, ok := raw.Arms[0]["hit_rate"]; ok {
		t.Error("arm without cache has hit_rate; want it left out")
	}
	for _, k := range []string{"accepted", "rejected", "summary", "warnings", "what_would_change"} {
		if _, ok := raw.Decision[k]; !ok {
			t.Errorf("decision JSON lacks %q", k)
		}
	}
}

func BenchmarkSummarize(b *testing.B) {
	for _, n := range []int{400, 10000} {
		b.Run(fmt.Sprintf("tasks=%d/arms=6", n), func(b *testing.B) {
			var recs []Record
			for a := range 6 {
				for i := range n {
					r := mkRec(fmt.Sprint("arm", a), fmt.Sprint("t", i), float64((i*7919+a*31)%1000), OutcomeOK, (i+a)%10 != 0, 1)
					r.Group = []string{"short", "long", "tool"}[i%3]
					recs = append(recs, r)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := summarizeRecs(recs, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
