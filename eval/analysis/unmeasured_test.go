package analysis

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// unmeasuredArms is a baseline and a candidate of 8 tasks each, the
// candidate candLat ms where the baseline takes 100 (plus the task's
// index), each record marked with what it did not measure; measured
// figures are a pass and a cost of 1.
func unmeasuredArms(candLat float64, base, cand []string) []Record {
	var recs []Record
	for _, arm := range []struct {
		name    string
		lat     float64
		missing []string
	}{{"baseline", 100, base}, {"cand", candLat, cand}} {
		for i := range 8 {
			r := mkRec(arm.name, fmt.Sprint("t", i), arm.lat+float64(i), OutcomeOK, true, 1)
			r.Unmeasured = arm.missing
			if !r.Measured(records.FigureQuality) {
				r.Pass = false
			}
			if !r.Measured(records.FigureCost) {
				r.Cost = 0
			}
			recs = append(recs, r)
		}
	}
	return recs
}

func TestUnmeasuredGate(t *testing.T) {
	t.Parallel()
	vllm := []string{records.FigureCost, records.FigureQuality}
	litellm := []string{records.FigureQuality}
	costOnly := []string{records.FigureCost}
	tests := []struct {
		name        string
		recs        []Record
		gate        GateConfig
		wantVerdict string
		wantReason  string // substring of the first reason
	}{
		{"vllm: no grading", unmeasuredArms(50, vllm, vllm), GateConfig{}, VerdictInconclusive, "quality is not measured: the records of baseline and cand carry no grading"},
		{"vllm: quality waived, cost not", unmeasuredArms(50, vllm, vllm), GateConfig{Waive: []string{WaiveQuality}}, VerdictInconclusive, "cost is not measured in the records of baseline and cand"},
		{"vllm: both waived, faster", unmeasuredArms(50, vllm, vllm), GateConfig{Waive: []string{WaiveQuality, WaiveCost}}, VerdictAccept, ""},
		{"vllm: both waived, identical twin", unmeasuredArms(100, vllm, vllm), GateConfig{Waive: []string{WaiveQuality, WaiveCost}}, VerdictNoGain, "no gain"},
		{"vllm: both waived, slower", unmeasuredArms(200, vllm, vllm), GateConfig{Waive: []string{WaiveQuality, WaiveCost}}, VerdictReject, "breaks a guardrail: p95"},
		{"litellm: no grading", unmeasuredArms(50, litellm, litellm), GateConfig{}, VerdictInconclusive, "carry no grading"},
		{"litellm: quality waived", unmeasuredArms(50, litellm, litellm), GateConfig{Waive: []string{WaiveQuality}}, VerdictAccept, ""},
		{"cost on one side only, objective cost", unmeasuredArms(100, costOnly, nil), GateConfig{Objective: ObjectiveCost, Waive: []string{WaiveCost}}, VerdictInconclusive, "the gate's objective is cost"},
		{"cost on one side only", unmeasuredArms(50, nil, costOnly), GateConfig{}, VerdictInconclusive, "records of cand"},
		{"goodput needs quality", unmeasuredArms(50, litellm, litellm), GateConfig{Objective: ObjectiveGoodput, SLO: SLO{E2EMs: 1000}, Waive: []string{WaiveQuality}}, VerdictInconclusive, "goodput counts passing requests"},
		{"ttft guardrail", unmeasuredArms(50, []string{records.FigureTTFT}, nil), GateConfig{TTFTP95RegressPct: f64p(10)}, VerdictInconclusive, "TTFT is not measured"},
		{"ttft waived", unmeasuredArms(50, []string{records.FigureTTFT}, nil), GateConfig{TTFTP95RegressPct: f64p(10), Waive: []string{WaiveTTFT}}, VerdictAccept, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := tt.gate
			g.Rule = RuleNet // eight tasks whose outcomes are the same on every call
			s, err := summarizeRecs(tt.recs, Options{Gate: &g, Seed: 1, Resamples: 200})
			if err != nil {
				t.Fatal(err)
			}
			a := s.Arms[1]
			if a.Verdict != tt.wantVerdict {
				t.Fatalf("got verdict %s; want %s (reasons %q)", a.Verdict, tt.wantVerdict, a.Reasons)
			}
			if tt.wantReason != "" && !strings.Contains(a.Reasons[0], tt.wantReason) {
				t.Errorf("got first reason %q; want it to contain %q", a.Reasons[0], tt.wantReason)
			}
		})
	}
}

// TestUnmeasuredFigures: an arm whose records carry no cost or grading
// has those figures unmeasured, not 0, in the summary and its JSON, and
// one note per figure says so.
func TestUnmeasuredFigures(t *testing.T) {
	t.Parallel()
	vllm := []string{records.FigureCost, records.FigureQuality, records.FigureTokens}
	s, err := summarizeRecs(unmeasuredArms(50, vllm, vllm), Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	if !slices.Equal(a.Unmeasured, vllm) {
		t.Errorf("got unmeasured %q; want %q", a.Unmeasured, vllm)
	}
	if a.CostPerPass != nil || a.Paired.CostDelta != nil || a.Uncertainty.CostPerPassCI.Lo != nil {
		t.Errorf("got cost per pass %v, cost delta %v, interval %v; want none", a.CostPerPass, a.Paired.CostDelta, a.Uncertainty.CostPerPassCI)
	}
	m := jsonFields(t, &a)
	for _, k := range []string{"pass", "cost", "cost_per_pass", "tokens_out_mean"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("JSON %s = %v (present %v); want null", k, v, ok)
		}
	}
	if m["p95_ms"] == nil {
		t.Errorf("JSON p95_ms missing: measured figures must stay: %v", m)
	}
	paired, _ := m["paired"].(map[string]any)
	for _, k := range []string{"lost", "gained", "mcnemar_p"} {
		if v, ok := paired[k]; !ok || v != nil {
			t.Errorf("JSON paired.%s = %v (present %v); want null: nothing was graded", k, v, ok)
		}
	}
	if paired["pairs"] != float64(a.Paired.Pairs) || a.Paired.Pairs == 0 {
		t.Errorf("JSON paired.pairs = %v; want %d: measured figures must stay", paired["pairs"], a.Paired.Pairs)
	}
	var notes []string
	for _, n := range s.Notes {
		if strings.Contains(n, "not measured: the records of baseline and cand") {
			notes = append(notes, n)
		}
	}
	if len(notes) != 3 {
		t.Errorf("got %d unmeasured notes; want 3 (cost, quality, tokens): %q", len(notes), s.Notes)
	}
}

// TestMeasuredJSONUnchanged: records that measured everything write the
// summary JSON they always did (no unmeasured key, numbers in place).
func TestMeasuredJSONUnchanged(t *testing.T) {
	t.Parallel()
	s, err := summarizeRecs(unmeasuredArms(50, nil, nil), Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	type plain ArmSummary
	got, err := json.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(plain(a))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || strings.Contains(string(got), "unmeasured") {
		t.Errorf("got %s; want %s", got, want)
	}
}

// latencyArms is a baseline of 20 answered tasks and a candidate whose
// first failed tasks failed without a duration (latency unmeasured, 0 as a
// placeholder), the others answered in candLat ms.
func latencyArms(candLat float64, failed int) []Record {
	var recs []Record
	for i := range 20 {
		recs = append(recs, mkRec("baseline", fmt.Sprint("t", i), 100+float64(i), OutcomeOK, false, 0))
		r := mkRec("cand", fmt.Sprint("t", i), candLat+float64(i), OutcomeOK, false, 0)
		if i < failed {
			r.Outcome, r.Error, r.E2EMs = OutcomeError, "HTTP 503", 0
			r.Unmeasured = []string{records.FigureLatency}
		}
		recs = append(recs, r)
	}
	for i := range recs {
		recs[i].MarkUnmeasured(records.FigureCost, records.FigureQuality)
	}
	return recs
}

// A failure without a duration is a failure, never a 0 ms latency: the
// latency figures are over the requests that measured one, a note says
// how many were left out, and with none measured they are null.
func TestLatencyUnmeasured(t *testing.T) {
	t.Parallel()
	s, err := summarizeRecs(latencyArms(100, 3), Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	if a.Failed != 3 || a.LatencyUnmeasured != 3 || !a.Measured(records.FigureLatency) || a.MinMs != 103 || a.P50Ms < 103 {
		t.Errorf("partly measured: failed %d, left out %d, measured %v, min %v, p50 %v; want 3, 3, true, min 103", a.Failed, a.LatencyUnmeasured, a.Measured(records.FigureLatency), a.MinMs, a.P50Ms)
	}
	if g := a.Uncertainty.P50CI.Lo; g == nil || *g < 103 {
		t.Errorf("p50 interval low end %v: a failure's placeholder 0 entered it", g)
	}
	if !slices.ContainsFunc(s.Notes, func(n string) bool { return strings.Contains(n, "latency not measured for 3 of 20 requests of cand") }) {
		t.Errorf("no note on the requests left out: %q", s.Notes)
	}
	s, err = summarizeRecs(latencyArms(100, 20), Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	a = s.Arms[1]
	if a.Measured(records.FigureLatency) || a.OK != 0 || a.LatencyUnmeasured != 20 {
		t.Fatalf("all failed: measured %v, ok %d, left out %d", a.Measured(records.FigureLatency), a.OK, a.LatencyUnmeasured)
	}
	m := jsonFields(t, &a)
	for _, k := range []string{"p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms", "mean_ms", "min_ms"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("JSON %s = %v (present %v); want null: no request measured a latency", k, v, ok)
		}
	}
	if a.Verdict == VerdictAccept || a.Verdict == VerdictNoGain {
		t.Errorf("a candidate whose every request failed got %s", a.Verdict)
	}
}

// A candidate failing half its requests without a duration, otherwise as
// fast, is not faster: its paired latency delta is over the pairs that
// measured a latency on both sides, never a failure's placeholder 0.
func TestLatencyUnmeasuredPaired(t *testing.T) {
	t.Parallel()
	recs := latencyArms(100, 0)
	for i := range recs {
		if recs[i].Arm == "cand" && i%4 == 1 { // every other task of the candidate
			recs[i].Outcome, recs[i].Error, recs[i].E2EMs = OutcomeError, "HTTP 500", 0
			recs[i].MarkUnmeasured(records.FigureLatency)
		}
	}
	g := GateConfig{Waive: []string{WaiveQuality, WaiveCost}}
	s, err := summarizeRecs(recs, Options{Gate: &g, Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	if d := a.Paired.LatencyDeltaMs; d == nil || d.Mean != 0 || d.CILow != 0 {
		t.Errorf("paired latency delta %+v; want 0 over the 10 pairs that measured latency", d)
	}
	if a.Paired.Pairs != 20 || a.Failed != 10 {
		t.Errorf("pairs %d failed %d; want every pair counted (20) and 10 failed", a.Paired.Pairs, a.Failed)
	}
	if a.Verdict == VerdictAccept {
		t.Errorf("a candidate that failed half its requests, otherwise as fast, was accepted: %q", a.Reasons)
	}
}

// A cache hit whose leak could not be checked leaves the leaks unmeasured:
// null in JSON, never {} (which reads as none).
func TestLeaksUnmeasuredJSON(t *testing.T) {
	t.Parallel()
	recs := unmeasuredArms(50, nil, nil)
	for i := range recs {
		recs[i].Cache = "miss"
		if recs[i].Arm == "cand" && i%2 == 0 {
			recs[i].Cache, recs[i].Leak = "hit", records.LeakUnchecked
		}
	}
	s, err := summarizeRecs(recs, Options{Seed: 1, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arm  int
		want string
	}{{0, `"leaks":{}`}, {1, `"leaks":null`}} {
		b, err := json.Marshal(&s.Arms[c.arm])
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), c.want) {
			t.Errorf("arm %s: JSON lacks %s: %s", s.Arms[c.arm].Name, c.want, b)
		}
	}
}

// jsonFields is the JSON object v marshals to.
func jsonFields(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}
