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
	b, err := json.Marshal(&a)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"pass", "cost", "cost_per_pass", "tokens_out_mean"} {
		if v, ok := m[k]; !ok || v != nil {
			t.Errorf("JSON %s = %v (present %v); want null", k, v, ok)
		}
	}
	if m["p95_ms"] == nil {
		t.Errorf("JSON p95_ms missing: measured figures must stay: %s", b)
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
