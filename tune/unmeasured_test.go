package tune

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/stack"
)

// unpricedLarge is workload(n) with the large model's cost unmeasured, as
// Samples gives it for a model without a declared price.
func unpricedLarge(n int) []Sample {
	s := workload(n)
	for i := range s {
		s[i].Small.Model, s[i].Small.PriceAt = "cheap", "exp.yaml: models[0]"
		s[i].Large.Model, s[i].Large.PriceAt = "big", "exp.yaml: models[1]"
		s[i].Large.Cost = Unmeasured()
	}
	return s
}

// A pass-loss rule tunes on outcomes whose large model has no price: every
// cost that includes a large call is "-" in text and null in JSON, the
// all-small cost stays measured, and the choice says it went by large
// calls, not by a cost of 0.
func TestTuneUnpricedLargeModel(t *testing.T) {
	t.Parallel()
	rep, err := Router(unpricedLarge(300), Config{Seed: 2, Folds: 2, Rule: Rule{MaxPassLoss: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.CostUnmeasured) != 1 || rep.CostUnmeasured[0] != "big" {
		t.Errorf("cost unmeasured for %v; want [big]", rep.CostUnmeasured)
	}
	for _, p := range []*PolicyReport{&rep.PolicyReport, rep.Cascade} {
		h := &p.Holdout
		if h.CostAllLarge.Measured() || h.Cost.Measured() || h.Paired.CostDiff.Measured() || h.Paired.CostCI[0].Measured() {
			t.Errorf("%s: holdout cost %v, all-large %v, paired %v %v; want every one unmeasured", p.Policy, h.Cost, h.CostAllLarge, h.Paired.CostDiff, h.Paired.CostCI)
		}
		if !h.CostAllSmall.Measured() || h.CostAllSmall != Figure(h.N) {
			t.Errorf("%s: all-small cost %v; want %d (measured: it calls no unpriced model)", p.Policy, h.CostAllSmall, h.N)
		}
		if p.Folds == nil || p.Folds.CostSaving[1].Measured() {
			t.Errorf("%s: folds %+v; want the cost saving unmeasured", p.Policy, p.Folds)
		}
		if !strings.Contains(p.Calibration.ChosenBy, "calling the large model least") {
			t.Errorf("%s: chosen by %q; want the fewest large calls named", p.Policy, p.Calibration.ChosenBy)
		}
		// Among the points passing enough, none calls the large model less.
		need, chosen := p.Calibration.PassAllLarge-2, -1
		for _, s := range p.Sweep {
			if s.Threshold == p.Threshold {
				chosen = s.Large
			}
		}
		for _, s := range p.Sweep {
			if s.Pass >= need && s.Large < chosen {
				t.Errorf("%s: threshold %v passes %d with %d large calls; the chosen one makes %d", p.Policy, s.Threshold, s.Pass, s.Large, chosen)
			}
		}
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"note: cost not measured for big (no declared price; declare exp.yaml: models[1].price_in_per_mtok (and price_out_per_mtok))",
		"\n  all-large  ", "cost saving vs all-large -/-/-", "large-calls–pass (cost not measured) Pareto frontier",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[0] == "all-large" && (f[2] != "-" || f[3] != "-") {
			t.Errorf("all-large row %q; want cost and cost/pass -", line)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	var js struct {
		Unmeasured []string `json:"cost_unmeasured"`
		Holdout    struct {
			Cost         *float64 `json:"cost"`
			CostAllLarge *float64 `json:"cost_all_large"`
			CostAllSmall *float64 `json:"cost_all_small"`
		} `json:"holdout"`
	}
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatal(err)
	}
	if js.Holdout.Cost != nil || js.Holdout.CostAllLarge != nil || js.Holdout.CostAllSmall == nil || len(js.Unmeasured) != 1 {
		t.Errorf("JSON holdout %+v, unmeasured %v; want cost and all-large null, all-small a number, [big]", js.Holdout, js.Unmeasured)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Holdout.CostAllLarge.Measured() || back.Holdout.CostAllSmall != rep.Holdout.CostAllSmall {
		t.Errorf("JSON read back: %v, all-large %v, all-small %v; want null read as unmeasured", err, back.Holdout.CostAllLarge, back.Holdout.CostAllSmall)
	}
	var csv bytes.Buffer
	if err := writeSweepCSV(&csv, rep); err != nil {
		t.Fatal(err)
	}
	if rows := strings.Split(csv.String(), "\n"); !strings.Contains(rows[1], ",,") {
		t.Errorf("sweep CSV row %q; want empty cost cells", rows[1])
	}
	for _, p := range []*PolicyReport{&rep.PolicyReport, rep.Cascade} {
		var svg bytes.Buffer
		if err := p.WriteSVG(&svg, "t"); err != nil || !strings.Contains(svg.String(), "cost not measured") {
			t.Errorf("%s: SVG: %v; want it drawn against the large-call share, saying cost is not measured", p.Policy, err)
		}
	}
}

// A budget rule on outcomes whose large model has no price refuses, naming
// the model and the price field to declare, instead of choosing on costs
// of 0.
func TestTuneUnpricedBudgetRefused(t *testing.T) {
	t.Parallel()
	_, err := Router(unpricedLarge(300), Config{Seed: 2, Rule: Rule{Budget: 3}})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("got %v; want ErrConfig", err)
	}
	for _, want := range []string{"--budget", "big", "exp.yaml: models[1].price_in_per_mtok"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// An outcome table's unmeasured cost is null, read back as unmeasured; a
// model the experiment declares no price for has unmeasured cost whatever
// an older table says.
func TestOutcomeTableUnmeasuredCost(t *testing.T) {
	t.Parallel()
	_, s, tg, tab := builtTable(t, 30)
	edited := *tab.Table
	edited.Rows = append([]OutcomeRow(nil), tab.Table.Rows...)
	edited.Rows[0].Cost = Unmeasured()
	var b bytes.Buffer
	if err := WriteOutcomeTable(&b, &edited); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"cost":null`) {
		t.Errorf("table lacks a null cost:\n%.400s", b.String())
	}
	back, err := ReadOutcomeTable(&b, "t.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if back.Rows[0].Cost.Measured() || !back.Rows[1].Cost.Measured() {
		t.Errorf("read back costs %v, %v; want unmeasured, measured", back.Rows[0].Cost, back.Rows[1].Cost)
	}
	for i := range s.Exp.Models {
		if s.Exp.Models[i].Name == tg.Large {
			m := &s.Exp.Models[i]
			m.Backend, m.PriceInPerMTok, m.PriceOutPerMTok = stack.BackendOpenAI, nil, nil
		}
	}
	if err := s.CheckRule(tg, Rule{Budget: 1}); !errors.Is(err, ErrConfig) || !regexp.MustCompile(`\.yaml:\d+: models\[\d+\]\.price_in_per_mtok`).MatchString(err.Error()) {
		t.Errorf("a budget on an unpriced target: %v; want ErrConfig naming the file, line and price field", err)
	}
	if err := s.CheckRule(tg, Rule{MaxPassLoss: 1}); err != nil {
		t.Errorf("a pass-loss rule on an unpriced target: %v; want none", err)
	}
	samples, err := s.Samples(tab.Table, nil, tab.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range samples {
		if x.Large.Cost.Measured() || !x.Small.Cost.Measured() || !strings.Contains(x.Large.PriceAt, ": models[") {
			t.Fatalf("sample %s: small cost %v, large cost %v at %q; want the unpriced large model's unmeasured", x.ID, x.Small.Cost, x.Large.Cost, x.Large.PriceAt)
		}
	}
}
