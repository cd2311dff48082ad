package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/records"
)

// armSpec describes one arm of a generated run whose outcomes may vary
// from call to call.
type armSpec struct {
	name string
	// lose is the share of the tasks that pass on every call which this
	// arm fails on every call instead (a real loss of pass rate).
	lose float64
	lat  float64 // latency per request, ms
	cost float64
}

// varyingRun generates n tasks × repeats for each arm: a share vary of
// the tasks pass on each call with probability 1/2, whatever the arm; of
// the rest, 80% pass on every call and 20% fail on every call. Seeded.
func varyingRun(seed uint64, n, repeats int, vary float64, arms ...armSpec) []Record {
	rng := rand.New(rand.NewPCG(seed, 11))
	kind := make([]float64, n)  // < vary: varies; else passes when < vary + 0.8·(1-vary)
	loseU := make([]float64, n) // compared with an arm's lose
	for i := range kind {
		kind[i], loseU[i] = rng.Float64(), rng.Float64()
	}
	var recs []Record
	for _, a := range arms {
		for r := range repeats {
			for i := range n {
				var pass bool
				switch {
				case kind[i] < vary:
					pass = rng.Float64() < 0.5
				case kind[i] < vary+0.8*(1-vary):
					pass = loseU[i] >= a.lose/0.8
				}
				out := OutcomeOK
				rec := mkRec(a.name, fmt.Sprintf("t%03d", i), a.lat*(0.9+0.2*rng.Float64()), out, pass, a.cost)
				rec.Repeat = r
				recs = append(recs, rec)
			}
		}
	}
	return recs
}

// Rule margin, the default, on outcomes that vary from call to call: an
// identical twin is never rejected and never flags the run, a real loss
// of 6 points over enough tasks is rejected naming the tasks that moved,
// an equal candidate over few tasks is inconclusive with the tasks that
// would decide it, and over enough tasks it is accepted when faster.
func TestMarginRule(t *testing.T) {
	t.Parallel()
	base := armSpec{name: "baseline", lat: 100, cost: 1}
	tests := []struct {
		name      string
		n, rep    int
		vary      float64
		cand      armSpec
		control   bool
		want      string
		wantWords []string // each in some reason of the candidate
		result    string   // the candidate's quality result
	}{
		{"identical twin, varying outcomes", 300, 3, 0.1, armSpec{name: "cand", lat: 100, cost: 1}, true, VerdictNoGain, nil, QualityHolds},
		// One outcome per task: 400 tasks cannot yet bound the noise
		// within 2 points, and say how many would.
		{"identical twin, varying outcomes, one repeat", 400, 1, 0.1, armSpec{name: "cand", lat: 100, cost: 1}, true, VerdictInconclusive,
			[]string{"would decide at about", "and the noise floor", "or at about 2 repeats of these 400 tasks"}, QualityInconclusive},
		{"6-point loss, enough tasks", 600, 2, 0.1, armSpec{name: "cand", lose: 0.06, lat: 50, cost: 0.5}, false, VerdictReject,
			[]string{"loses pass rate: pass rate -", "wholly below the -2-point margin", "moved most: t", "not rescued by speed or cost"}, QualityBroken},
		{"6-point loss, few tasks", 40, 1, 0, armSpec{name: "cand", lose: 0.06, lat: 50, cost: 0.5}, false, VerdictInconclusive,
			[]string{"reaches below the -2-point margin", "would decide at about"}, QualityInconclusive},
		{"equal, small n", 30, 2, 0.1, armSpec{name: "cand", lat: 50, cost: 0.5}, false, VerdictInconclusive,
			[]string{"inconclusive: quality: pass rate", "would decide at about", "noise floor"}, QualityInconclusive},
		{"equal, large n, faster", 400, 1, 0, armSpec{name: "cand", lat: 50, cost: 0.5}, false, VerdictAccept, nil, QualityHolds},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := &GateConfig{}
			if tt.control {
				g.Control = "cand"
			}
			s, err := summarizeRecs(varyingRun(7, tt.n, tt.rep, tt.vary, base, tt.cand), Options{Gate: g, Seed: 1, Resamples: 400})
			if err != nil {
				t.Fatal(err)
			}
			a := &s.Arms[1]
			if a.Verdict != tt.want {
				t.Fatalf("verdict %s; want %s (reasons %q)", a.Verdict, tt.want, a.Reasons)
			}
			joined := strings.Join(a.Reasons, "\n")
			for _, w := range tt.wantWords {
				if !strings.Contains(joined, w) {
					t.Errorf("reasons %q; want one containing %q", a.Reasons, w)
				}
			}
			if a.Quality == nil || a.Quality.Result != tt.result || a.Quality.Rule != RuleMargin || a.Quality.Margin == nil || *a.Quality.Margin != 2 {
				t.Fatalf("quality %+v; want rule margin, margin 2, result %s", a.Quality, tt.result)
			}
			if q := a.Quality; !(q.Interval[0] <= q.Delta && q.Delta <= q.Interval[1]) {
				t.Errorf("quality delta %v outside its interval %v", q.Delta, q.Interval)
			}
			if (tt.result == QualityInconclusive) != (a.Quality.TasksToDecide != nil) {
				t.Errorf("tasks to decide %v for a %s result; want a figure exactly when inconclusive", a.Quality.TasksToDecide, tt.result)
			}
			if k := a.Quality.TasksToDecide; k != nil && *k <= tt.n {
				t.Errorf("would decide at %d tasks; want more than the %d it has", *k, tt.n)
			}
			if tt.control && s.Decision.Miscalibrated != "" {
				t.Errorf("an identical twin flags the run: %s", s.Decision.Miscalibrated)
			}
		})
	}
}

// Over many seeds, an identical twin whose outcomes vary is never
// rejected or accepted, and flags the run in at most about α of them.
func TestTwinWithVaryingOutcomes(t *testing.T) {
	t.Parallel()
	const runs = 40
	flagged := 0
	for seed := range uint64(runs) {
		recs := varyingRun(seed, 120, 1, 0.15, armSpec{name: "baseline", lat: 100, cost: 1}, armSpec{name: "twin", lat: 100, cost: 1})
		s, err := summarizeRecs(recs, Options{Gate: &GateConfig{Control: "twin"}, Seed: int64(seed), Resamples: 300})
		if err != nil {
			t.Fatal(err)
		}
		if v := s.Arms[1].Verdict; v == VerdictReject || v == VerdictAccept {
			t.Errorf("seed %d: twin %s (%q)", seed, v, s.Arms[1].Reasons)
		}
		if s.Decision.Miscalibrated != "" {
			flagged++
		}
	}
	// At α = 5%, 40 runs flag about 2; 6 or more has a chance below 1%.
	if flagged > 5 {
		t.Errorf("twin flagged in %d of %d runs; want at most about 5%%", flagged, runs)
	}
}

func TestQualityInterval(t *testing.T) {
	t.Parallel()
	zeros := func(n int) []float64 { return make([]float64, n) }
	losses := func(n, k int) []float64 {
		d := zeros(n)
		for i := range k {
			d[i] = -1
		}
		return d
	}
	tests := []struct {
		name     string
		diffs    []float64
		low, hi  [2]float64 // bounds on Low and High
		wantP    float64    // NaN: any
		holdsAt2 bool       // lower end above -2 points
	}{
		// 30 tasks that all agree cannot bound a loss near the 95%
		// binomial bound (about 3.7/30 = 12 points): far below -2 points.
		{"30 agreeing tasks", zeros(30), [2]float64{-0.16, -0.1}, [2]float64{0.1, 0.16}, 1, false},
		// 250 agreeing tasks bound it within 2 points.
		{"250 agreeing tasks", zeros(250), [2]float64{-0.02, -0.01}, [2]float64{0.01, 0.02}, 1, true},
		// 2000 tasks, 3% lost.
		{"3% lost", losses(2000, 60), [2]float64{-0.04, -0.03}, [2]float64{-0.03, -0.02}, math.NaN(), false},
	}
	for _, tt := range tests {
		iv := QualityInterval(tt.diffs, 0.05)
		if iv.Low < tt.low[0] || iv.Low > tt.low[1] || iv.High < tt.hi[0] || iv.High > tt.hi[1] {
			t.Errorf("%s: interval [%v, %v]; want low in %v, high in %v", tt.name, iv.Low, iv.High, tt.low, tt.hi)
		}
		if !math.IsNaN(tt.wantP) && iv.P != tt.wantP {
			t.Errorf("%s: p %v; want %v", tt.name, iv.P, tt.wantP)
		}
		if (iv.Low > -0.02) != tt.holdsAt2 {
			t.Errorf("%s: low %v; holds at 2 points %v, want %v", tt.name, iv.Low, iv.Low > -0.02, tt.holdsAt2)
		}
	}
	if iv := QualityInterval(nil, 0.05); !math.IsNaN(iv.Low) {
		t.Errorf("no tasks: %+v; want NaN", iv)
	}
	// Tasks to decide: an equal candidate with nothing moving needs
	// about t²/margin tasks; one at the margin itself, none.
	if k := TasksToDecide(0, 0, 0.05, 0.02); k < 150 || k > 250 {
		t.Errorf("TasksToDecide(0, 0) = %d; want about 190", k)
	}
	if k := TasksToDecide(-0.02, 0.05, 0.05, 0.02); k != 0 {
		t.Errorf("TasksToDecide at the margin = %d; want 0 (none decides)", k)
	}
	iv := momentsInterval(float64(TasksToDecide(0, 0.05, 0.05, 0.02)), 0, 0.05*float64(TasksToDecide(0, 0.05, 0.05, 0.02)), 0.05)
	if iv.Low <= -0.02 {
		t.Errorf("at the tasks TasksToDecide names the interval is %+v; want it above -2 points", iv)
	}
}

// The noise floor is measured from the baseline's repeats, else from the
// baseline against its twin, and is otherwise not measured (null
// figures, and a note that says what that means for the rule in force).
func TestNoiseFloor(t *testing.T) {
	t.Parallel()
	base, twin := armSpec{name: "baseline", lat: 100, cost: 1}, armSpec{name: "twin", lat: 100, cost: 1}
	tests := []struct {
		name    string
		recs    []Record
		gate    GateConfig
		source  string
		varying bool
		note    string
	}{
		{"repeats", varyingRun(1, 200, 3, 0.2, base, twin), GateConfig{}, NoiseRepeats, true, "passed on some repeats of baseline"},
		{"twin", varyingRun(1, 200, 1, 0.2, base, twin), GateConfig{Control: "twin"}, NoiseTwin, true, "came out differently on baseline and its identical twin twin"},
		{"steady repeats", varyingRun(1, 200, 2, 0, base, twin), GateConfig{}, NoiseRepeats, false, "0 of 200 repeated tasks"},
		{"none", varyingRun(1, 200, 1, 0.2, base, twin), GateConfig{}, NoiseNone, false, "noise floor not measured (no task was repeated and there is no A/A twin): the quality interval"},
		{"none, sample rule", varyingRun(1, 200, 1, 0.2, base, twin), GateConfig{Rule: RuleNet}, NoiseNone, false, "rule net counts the tasks lost in this one sample, which is a valid rule only if"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := tt.gate
			s, err := summarizeRecs(tt.recs, Options{Gate: &g, Resamples: 100})
			if err != nil {
				t.Fatal(err)
			}
			n := s.Noise
			if n.Source != tt.source {
				t.Fatalf("noise source %s; want %s", n.Source, tt.source)
			}
			if tt.source != NoiseNone && (*n.VaryingTasks > 0) != tt.varying {
				t.Errorf("varying tasks %d of %d; want some: %v", *n.VaryingTasks, *n.Tasks, tt.varying)
			}
			if !strings.Contains(strings.Join(s.Notes, "\n"), tt.note) {
				t.Errorf("notes %q; want one containing %q", s.Notes, tt.note)
			}
			raw, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Noise map[string]any `json:"noise"`
			}
			if err := json.Unmarshal(raw, &back); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"source", "tasks", "varying_tasks", "share"} {
				v, ok := back.Noise[k]
				if !ok || (tt.source == NoiseNone && k != "source" && v != nil) {
					t.Errorf("summary.json noise.%s = %v (present %v); want present, null when not measured", k, v, ok)
				}
			}
		})
	}
}

// A sample rule used on outcomes seen to vary says so beside the loss.
func TestSampleRuleOnVaryingOutcomes(t *testing.T) {
	t.Parallel()
	recs := varyingRun(3, 100, 2, 0.2, armSpec{name: "baseline", lat: 100, cost: 1}, armSpec{name: "cand", lat: 100, cost: 1})
	s, err := summarizeRecs(recs, Options{Gate: &GateConfig{Rule: RuleNet}, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	if a.Verdict != VerdictReject {
		t.Skipf("seed gave no net loss (%s); the wording is not exercised", a.Verdict)
	}
	if !strings.Contains(a.Reasons[0], "under sample rule net, though outcomes vary between identical calls (noise floor:") {
		t.Errorf("reason %q; want it to say the outcomes vary, with the noise floor", a.Reasons[0])
	}
}

// Holm's step-down accepts the smallest p-values while each is within
// (α/2)/k of the k still in play, and nothing after the first that is not.
func TestStepDown(t *testing.T) {
	t.Parallel()
	all := []claim{{"a", figLatency, 0.5}, {"b", figCost, 0.001}, {"c", figLatency, 0.013}, {"b", figLatency, 0.006}}
	f := stepDown(all, 0.05)
	want := map[string]map[string]bool{"b": {figCost: true, figLatency: true}, "c": {figLatency: false}, "a": {figLatency: false}}
	for arm, figs := range want {
		for fig, ok := range figs {
			if level := f.levels[arm][fig]; (level >= 0) != ok {
				t.Errorf("%s %s: level %v; want accepted %v", arm, fig, level, ok)
			}
		}
	}
	if f.size != 4 || f.levels["b"][figCost] != 0.025/4 || f.levels["b"][figLatency] != 0.025/3 {
		t.Errorf("family %+v; want 4 claims, levels 0.025/4 then 0.025/3", f)
	}
}

// Eight identical twins of the baseline, none the control: the family's
// correction keeps every one of them from being accepted.
func TestManyTwinsNoneAccepted(t *testing.T) {
	t.Parallel()
	for seed := range uint64(5) {
		arms := []armSpec{{name: "baseline", lat: 100, cost: 1}}
		for i := range 8 {
			arms = append(arms, armSpec{name: fmt.Sprint("twin", i), lat: 100, cost: 1})
		}
		s, err := summarizeRecs(varyingRun(seed, 300, 1, 0, arms...), Options{Seed: int64(seed), Resamples: 400})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Decision.Accepted) > 0 {
			t.Errorf("seed %d: accepted %v; want none of 8 identical twins", seed, s.Decision.Accepted)
		}
		if !strings.Contains(strings.Join(s.Notes, "\n"), "its 16 accept decisions") {
			t.Errorf("notes %q; want the family of 16 accept decisions stated", s.Notes)
		}
	}
}

// The failure share is gated on every source: a candidate failing half
// its requests, with quality and cost waived and otherwise faster, is
// rejected, not accepted as faster.
func TestFailureShareGate(t *testing.T) {
	t.Parallel()
	var recs []Record
	for i := range 40 {
		id := fmt.Sprint("t", i)
		out := OutcomeOK
		if i%2 == 0 {
			out = OutcomeError
		}
		// Records of a tool that measures neither quality nor cost.
		for _, r := range []Record{mkRec("baseline", id, 100, OutcomeOK, false, 0), mkRec("cand", id, 50, out, false, 0)} {
			r.Unmeasured = []string{records.FigureQuality, records.FigureCost}
			recs = append(recs, r)
		}
	}
	g := GateConfig{Waive: []string{WaiveQuality, WaiveCost}}
	s, err := summarizeRecs(recs, Options{Gate: &g, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	if a.Verdict != VerdictReject || !strings.Contains(a.Reasons[0], "fails more: errors and timeouts on 20 tasks where baseline succeeded, against 0 the other way") {
		t.Errorf("verdict %s (%q); want reject for failing more", a.Verdict, a.Reasons)
	}
	if c := s.Decision.WhatWouldChange["cand"]; !strings.Contains(c, "no more errors and timeouts than the baseline beyond chance") {
		t.Errorf("what would change %q; want fewer failures named", c)
	}
}

// Bad gate settings are refused naming the field.
func TestGateCheckQuality(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		g     GateConfig
		field string
	}{
		{GateConfig{MarginPP: f64p(-0.5)}, "margin_pp"},
		{GateConfig{MarginPP: f64p(100)}, "margin_pp"},
		{GateConfig{MarginPP: f64p(math.NaN())}, "margin_pp"},
		{GateConfig{Alpha: f64p(0)}, "alpha"},
		{GateConfig{Alpha: f64p(0.5)}, "alpha"},
		{GateConfig{Rule: RuleAny, MarginPP: f64p(2)}, "margin_pp"},
		{GateConfig{MaxLost: 1}, "max_lost"},
		{GateConfig{Rule: "best"}, "rule"},
		{GateConfig{Rule: RuleNet, MaxLost: 1}, ""},
		{GateConfig{MarginPP: f64p(0), Alpha: f64p(0.01)}, ""},
	} {
		if field, msg := tc.g.Check(); field != tc.field {
			t.Errorf("%+v: field %q (%s); want %q", tc.g, field, msg, tc.field)
		}
	}
}

// Cost per pass moves with every pass: a guardrail breach that rests on a
// few passes more or less has an interval, clustered by task, that
// reaches within the limit, and the verdict is inconclusive, not reject.
func TestCostPerPassInterval(t *testing.T) {
	t.Parallel()
	var recs []Record
	for i := range 40 {
		id := fmt.Sprintf("t%02d", i)
		recs = append(recs, mkRec("baseline", id, 100, OutcomeOK, i < 30, 1), mkRec("cand", id, 50, OutcomeOK, i < 26, 1))
	}
	g := GateConfig{MarginPP: f64p(30)} // quality holds: only the guardrail is in question
	s, err := summarizeRecs(recs, Options{Gate: &g, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	a := s.Arms[1]
	if a.Verdict != VerdictInconclusive || !strings.Contains(strings.Join(a.Reasons, "\n"), "cost per pass 1.538 vs 1.333 (+15%)") ||
		!strings.Contains(strings.Join(a.Reasons, "\n"), "but its paired 95% interval") {
		t.Errorf("verdict %s (%q); want inconclusive on a cost per pass beyond the limit whose interval reaches within it", a.Verdict, a.Reasons)
	}
	r := costPerPassRatio(a.Paired.tasks, 0.05)
	if r == nil || math.Abs(r.Point-30.0/26) > 1e-12 || r.CILow >= 1.1 || r.CIHigh <= r.Point {
		t.Errorf("ratio %+v; want point 30/26 with an interval reaching below 1.1", r)
	}
}
