package plan

import (
	"math"
	"testing"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
)

func defaults() Settings {
	return Settings{Alpha: 0.05, Family: 1, Power: 0.8, MarginPP: 5, MinEffectPct: 1}
}

// Sizes at a 5-point margin: ((t √max(V, m(1−m)) + 0.8416 √V) / (Δ+m))²,
// t of the two-sided 95% interval at n−1 degrees of freedom.
func TestQualityTasks(t *testing.T) {
	t.Parallel()
	s := defaults()
	tests := []struct {
		name string
		q    Quality
		r    int
		want Need
	}{
		// 10% of tasks flip with probability 0.5: identical calls disagree
		// on 5% of tasks; (1.975 + 0.8416)² · 0.05 / 0.05² = 158.6.
		{"equal, 10% vary", Quality{Within: Discordance(0.1, 0.5)}, 1, Need{Tasks: 159}},
		// Repeats shrink V to 0.0167, but the interval's floor m(1−m) =
		// 0.0475 at the bound does not shrink.
		{"three repeats", Quality{Within: 0.05}, 3, Need{Tasks: 117}},
		{"between tasks do not shrink", Quality{Between: 0.05}, 3, Need{Tasks: 159}},
		// Nothing varies: t² (1−m)/m tasks that all agree bound a loss.
		{"nothing varies", Quality{}, 1, Need{Tasks: 76}},
		{"on the margin", Quality{Diff: -0.05, Within: 0.05}, 1, Need{Never: true}},
		// A 6-point loss against a 5-point margin: 1 point to show.
		{"6-point loss", Quality{Diff: -0.06, Within: 0.05, Between: 0.06 * 0.94}, 1, Need{Tasks: 8353}},
	}
	for _, tc := range tests {
		if got := s.QualityTasks(tc.q, tc.r); got != tc.want {
			t.Errorf("%s: got %+v; want %+v", tc.name, got, tc.want)
		}
	}
}

// The objective is sized at the family's share of the error rate and
// must clear the minimum effect, not zero.
func TestEffectPairs(t *testing.T) {
	t.Parallel()
	s := defaults()
	e := Effect{Mean: 100, SD: 50, Pct: 11}
	// One-sided at α/2: (1.96 + 0.8416)² · 2500 / 10² = 196.2
	if got := s.EffectPairs(e); got.Tasks != 197 {
		t.Errorf("family 1: got %+v; want 197 pairs", got)
	}
	s.Family = 10 // Holm's first step: z at 1 - 0.025/10 = 2.807
	if got, want := s.EffectPairs(e).Tasks, int(math.Ceil(math.Pow(2.807+0.8416, 2)*25)); got < want-1 || got > want+1 {
		t.Errorf("family 10: got %d pairs; want about %d", got, want)
	}
	if got := s.EffectPairs(Effect{Mean: 100, SD: 50, Pct: 1}); !got.Never {
		t.Errorf("effect at the minimum: got %+v; want never", got)
	}
}

func TestSettingsCheck(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]Settings{
		"alpha 0":      {Alpha: 0, Family: 1, Power: 0.8, MarginPP: 5},
		"alpha 0.5":    {Alpha: 0.5, Family: 1, Power: 0.8, MarginPP: 5},
		"power 1":      {Alpha: 0.05, Family: 1, Power: 1, MarginPP: 5},
		"margin 100":   {Alpha: 0.05, Family: 1, Power: 0.8, MarginPP: 100},
		"margin -1":    {Alpha: 0.05, Family: 1, Power: 0.8, MarginPP: -1},
		"no decisions": {Alpha: 0.05, Family: 0, Power: 0.8, MarginPP: 5},
	} {
		if s.Check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if err := defaults().Check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

// A pilot with repeats measures the noise floor as the share of pairs of
// identical calls that disagree, and splits a candidate's variance into
// what repeats can and cannot shrink.
func TestFromRecords(t *testing.T) {
	t.Parallel()
	var recs []records.Record
	add := func(arm, task string, rep int, pass bool, ms float64) {
		recs = append(recs, records.Record{Arm: arm, TaskID: task, Repeat: rep, Outcome: records.OutcomeOK, ContractOK: true,
			Pass: pass, Correct: pass, E2EMs: ms, Cost: 1})
	}
	// Task a passes in 1 of 2 repeats on each arm (discordance 1), b and c
	// always pass, d always passes on the baseline and never on the
	// candidate.
	for rep := range 2 {
		add("baseline", "a", rep, rep == 0, 100)
		add("cand", "a", rep, rep == 1, 80)
		for _, task := range []string{"b", "c"} {
			add("baseline", task, rep, true, 100)
			add("cand", task, rep, true, 80)
		}
		add("baseline", "d", rep, true, 100)
		add("cand", "d", rep, false, 80)
	}
	set, err := records.SetOf(recs)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := analysis.Summarize(set, analysis.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := FromRecords(set, "", "", sum.Noise)
	if err != nil {
		t.Fatal(err)
	}
	if p.Tasks != 4 || p.Repeats != 2 || p.Noise != 0.25 || p.PassRate != 7.0/8 {
		t.Errorf("pilot: tasks %d repeats %d noise %v pass %v; want 4, 2, 0.25, 0.875", p.Tasks, p.Repeats, p.Noise, p.PassRate)
	}
	c := p.Candidates[0]
	// d: -1, -1; a: -1, +1 (variance 2); b, c: 0. Within = 2/4; task
	// means -1, 0, 0, 0: variance 0.25, less within/2 = 0.
	if c.Pairs != 8 || c.Quality.Diff != -0.25 || c.Quality.Within != 0.5 || c.Quality.Between != 0 {
		t.Errorf("candidate: %+v; want 8 pairs, diff -0.25, within 0.5, between 0", c)
	}
	if c.Latency.Pct != 20 || c.Latency.SD != 0 {
		t.Errorf("latency: %+v; want 20%% lower, sd 0", c.Latency)
	}
}

// A candidate on a model without a price has no cost effect and no cost
// per call: its records' placeholder 0 would read as a candidate 100%
// cheaper, which a plan would then size and point to accept.
func TestFromRecordsUnpricedCandidate(t *testing.T) {
	t.Parallel()
	var recs []records.Record
	for _, task := range []string{"a", "b", "c", "d"} {
		recs = append(recs, records.Record{Arm: "baseline", TaskID: task, Outcome: records.OutcomeOK, ContractOK: true, Pass: true, Correct: true, E2EMs: 100, Cost: 1},
			records.Record{Arm: "cand", TaskID: task, Outcome: records.OutcomeOK, ContractOK: true, Pass: true, Correct: true, E2EMs: 100,
				Unmeasured: []string{records.FigureCost}})
	}
	set, err := records.SetOf(recs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := FromRecords(set, "", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !p.CostMeasured || p.CostMean != 1 || len(p.CostUnmeasured) != 1 || p.CostUnmeasured[0] != "cand" {
		t.Errorf("pilot: cost measured %v, mean %v, unmeasured %v; want the baseline's measured at 1, cand unmeasured", p.CostMeasured, p.CostMean, p.CostUnmeasured)
	}
	if _, ok := p.CostPerCall["cand"]; ok || p.CostPerCall["baseline"] != 1 {
		t.Errorf("cost per call %v; want the baseline's 1 and none for cand", p.CostPerCall)
	}
	c := p.Candidates[0]
	if c.CostMeasured || c.Cost != (Effect{}) {
		t.Errorf("candidate cost %+v (measured %v); want no effect", c.Cost, c.CostMeasured)
	}
	res := defaults().PointsTo(p, c, nil)
	if res.CostPct != nil || res.PointsTo == "accept" {
		t.Errorf("points to %s with cost %v; want no cost figure and no accept on it", res.PointsTo, res.CostPct)
	}
}
