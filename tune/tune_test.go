package tune

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/router"
)

func TestQuestionKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"I was charged twice.", "i was charged twice"},
		{"  I  was\ncharged\ttwice!! ", "i was charged twice"},
		{"¿Dónde está mi pedido?", "dónde está mi pedido"},
		{"退款。", "退款"},
		{"", ""},
	} {
		if got := QuestionKey(tc.in); got != tc.want {
			t.Errorf("QuestionKey(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

// sample builds a sample; pass flags say which model passes it.
func sample(id, group, key string, score float64, smallPass, largePass bool) Sample {
	return Sample{ID: id, Group: group, Key: key, Score: score,
		Small: Outcome{Outcome: "ok", OK: true, Pass: smallPass, Cost: 1, LatencyMs: 100, Confidence: 0.9},
		Large: Outcome{Outcome: "ok", OK: true, Pass: largePass, Cost: 10, LatencyMs: 1000, Confidence: 0.97}}
}

// workload is a synthetic task set: 3 groups, repeated questions, scores
// that mostly tell which tasks the small model fails.
func workload(n int) []Sample {
	var out []Sample
	groups := []string{"short", "long", "tool"}
	for i := range n {
		q := i % (n / 3) // every question asked three times
		score := float64(q%10) / 10
		smallPass := score < 0.5
		if q%17 == 0 {
			smallPass = !smallPass // a few surprises
		}
		out = append(out, sample(fmt.Sprintf("t%03d", i), groups[q%3], fmt.Sprintf("question %d", q), score, smallPass, q%23 != 0))
	}
	return out
}

func TestSplit(t *testing.T) {
	t.Parallel()
	samples := workload(300)
	for _, tc := range []struct {
		name    string
		holdout float64
		seed    int64
	}{{"default", 0.3, 42}, {"other seed", 0.3, 7}, {"half", 0.5, 1}, {"small holdout", 0.1, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calib, hold, err := Split(samples, tc.holdout, tc.seed)
			if err != nil {
				t.Fatal(err)
			}
			if len(calib)+len(hold) != len(samples) {
				t.Fatalf("got %d + %d tasks; want %d", len(calib), len(hold), len(samples))
			}
			side := map[string]bool{}
			for _, i := range hold {
				side[samples[i].Key] = true
			}
			for _, i := range calib {
				if side[samples[i].Key] {
					t.Fatalf("question %q on both sides", samples[i].Key)
				}
			}
			for _, g := range []string{"short", "long", "tool"} {
				n, h := 0, 0
				for i := range samples {
					if samples[i].Group == g {
						n++
					}
				}
				for _, i := range hold {
					if samples[i].Group == g {
						h++
					}
				}
				// clusters hold 3 tasks: the share can miss by one cluster
				if want := tc.holdout * float64(n); math.Abs(float64(h)-want) > 3 {
					t.Errorf("group %s: got %d held out of %d; want about %.0f", g, h, n, want)
				}
			}
			c2, h2, _ := Split(samples, tc.holdout, tc.seed)
			if !reflect.DeepEqual(calib, c2) || !reflect.DeepEqual(hold, h2) {
				t.Errorf("same seed gave a different split")
			}
		})
	}
	_, h1, _ := Split(samples, 0.3, 1)
	_, h2, _ := Split(samples, 0.3, 2)
	if reflect.DeepEqual(h1, h2) {
		t.Errorf("seeds 1 and 2 gave the same holdout")
	}
}

func TestSplitErrors(t *testing.T) {
	t.Parallel()
	one := []Sample{sample("a", "short", "same", 0, true, true), sample("b", "short", "same", 0, true, true)}
	for _, tc := range []struct {
		name    string
		samples []Sample
		holdout float64
		want    error
	}{
		{"one question", one, 0.3, ErrTooFewSamples},
		{"fraction 0", workload(30), 0, ErrConfig},
		{"fraction 1", workload(30), 1, ErrConfig},
		{"NaN", workload(30), math.NaN(), ErrConfig},
	} {
		if _, _, err := Split(tc.samples, tc.holdout, 1); !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v; want %v", tc.name, err, tc.want)
		}
	}
	// Two questions, a tiny holdout fraction: each side still gets one.
	two := []Sample{sample("a", "short", "q1", 0, true, true), sample("b", "short", "q2", 0, true, true)}
	c, h, err := Split(two, 0.1, 1)
	if err != nil || len(c) != 1 || len(h) != 1 {
		t.Errorf("two questions: got %v %v %v; want one on each side", c, h, err)
	}
}

func TestSweepPointsAndMisroutes(t *testing.T) {
	t.Parallel()
	// scores 0, 0.5, 0.9; small passes only the first; large passes all
	// but the last, which is hopeless.
	s := []Sample{
		sample("easy", "short", "a", 0, true, true),
		sample("hard", "short", "b", 0.5, false, true),
		sample("hopeless", "short", "c", 0.9, false, false),
	}
	idx := []int{0, 1, 2}
	pts := Sweep(router.PolicyThreshold, s, idx)
	type row struct {
		th                    float64
		large, pass           int
		cost                  Figure
		under, over, hopeless int
		underC, overC, hopeC  Figure
	}
	want := []row{
		{0, 3, 2, 30, 0, 1, 1, 0, 9, 10},
		{0.5, 2, 2, 21, 0, 0, 1, 0, 0, 10},
		{0.9, 1, 1, 12, 1, 0, 1, 10, 0, 10},
		{1, 0, 1, 3, 1, 0, 1, 10, 0, 1},
	}
	if len(pts) != len(want) {
		t.Fatalf("got %d points; want %d", len(pts), len(want))
	}
	for i, w := range want {
		p := pts[i]
		got := row{p.Threshold, p.Large, p.Pass, p.Cost, p.Misroutes.Under, p.Misroutes.Over, p.Misroutes.Hopeless,
			p.MisrouteCost.Under, p.MisrouteCost.Over, p.MisrouteCost.Hopeless}
		if got != w {
			t.Errorf("point %d: got %+v; want %+v", i, got, w)
		}
	}
	// frontier: 0.5 (21, 2) and 0.9 (12, 1) and 1 (3, 1)? 1 is cheaper
	// with the same passes as 0.9, so 0.9 is dominated.
	var front []float64
	for _, p := range pts {
		if p.Frontier {
			front = append(front, p.Threshold)
		}
	}
	if want := []float64{0.5, 1}; !reflect.DeepEqual(front, want) {
		t.Errorf("frontier %v; want %v", front, want)
	}
}

func TestChoose(t *testing.T) {
	t.Parallel()
	pts := []Point{
		{Threshold: 0, N: 10, Large: 10, Pass: 9, Cost: 100},
		{Threshold: 0.3, N: 10, Large: 6, Pass: 9, Cost: 64},
		{Threshold: 0.6, N: 10, Large: 3, Pass: 8, Cost: 37},
		{Threshold: 1, N: 10, Large: 0, Pass: 5, Cost: 10},
	}
	for _, tc := range []struct {
		name string
		rule Rule
		want float64
		met  bool
	}{
		{"no loss", Rule{}, 0.3, true},
		{"lose one", Rule{MaxPassLoss: 1}, 0.6, true},
		{"lose many", Rule{MaxPassLoss: 9}, 1, true},
		{"budget 4 per request", Rule{Budget: 4}, 0.6, true},
		{"budget 7 per request", Rule{Budget: 7}, 0.3, true},
		{"budget below everything", Rule{Budget: 0.5}, 1, false},
	} {
		c := Choose(pts, 9, tc.rule)
		if c.Threshold != tc.want || c.Met != tc.met || c.Why == "" {
			t.Errorf("%s: got threshold %v met %v (%s); want %v met %v", tc.name, c.Threshold, c.Met, c.Why, tc.want, tc.met)
		}
	}
}

func TestCascadeReplay(t *testing.T) {
	t.Parallel()
	mk := func(outcome string, ok bool, conf float64) Sample {
		s := sample("x", "short", "k", 0, ok, true)
		s.Small.Outcome, s.Small.OK, s.Small.Confidence = outcome, ok, conf
		return s
	}
	for _, tc := range []struct {
		name      string
		s         Sample
		threshold float64
		large     bool
	}{
		{"confident", mk("ok", true, 0.9), 0.6, false},
		{"unconfident", mk("ok", true, 0.5), 0.6, true},
		{"at the threshold", mk("ok", true, 0.6), 0.6, false},
		{"contract fail", mk("contract_fail", false, 0.9), 0.6, true},
		{"contract fail, threshold 0", mk("contract_fail", false, 0.9), 0, true},
		{"unknown confidence", mk("ok", true, 0), 0.6, true},
		{"timeout is not escalated", mk("timeout", false, 0), 0.6, false},
	} {
		small, large := calls(router.PolicyCascade, &tc.s, tc.threshold)
		if !small || large != tc.large {
			t.Errorf("%s: calls small %v large %v; want small true large %v", tc.name, small, large, tc.large)
		}
		p := replay(router.PolicyCascade, []Sample{tc.s}, []int{0}, tc.threshold, nil)
		wantCost := Figure(1)
		if tc.large {
			wantCost = 11
		}
		if p.Cost != wantCost {
			t.Errorf("%s: cost %v; want %v (both calls count)", tc.name, p.Cost, wantCost)
		}
	}
}

// An all-easy task set routes everything small, an all-hard one
// everything large: both are answers, not errors.
func TestTuneAllEasyAllHard(t *testing.T) {
	t.Parallel()
	easy := workload(60)
	hard := workload(60)
	for i := range easy {
		easy[i].Small.Pass, easy[i].Large.Pass = true, true
		hard[i].Small.Pass, hard[i].Large.Pass = false, true
		hard[i].Small.Confidence = 0.4
	}
	for _, tc := range []struct {
		name                 string
		samples              []Sample
		share, cascadeShare  float64
		threshold, cascadeTh float64
	}{
		{"all easy", easy, 0, 0, 1, 0},
		{"all hard", hard, 1, 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep, err := Router(tc.samples, Config{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Threshold != tc.threshold || rep.Holdout.StrongShare != tc.share {
				t.Errorf("router: threshold %v share %v; want %v %v", rep.Threshold, rep.Holdout.StrongShare, tc.threshold, tc.share)
			}
			if rep.Cascade == nil || rep.Cascade.Threshold != tc.cascadeTh || rep.Cascade.Holdout.StrongShare != tc.cascadeShare {
				t.Errorf("cascade: %+v; want confidence %v share %v", rep.Cascade, tc.cascadeTh, tc.cascadeShare)
			}
			if rep.Holdout.PassLoss != 0 || !rep.Holdout.WithinAllowed {
				t.Errorf("holdout loss %d within %v; want 0 true", rep.Holdout.PassLoss, rep.Holdout.WithinAllowed)
			}
		})
	}
}

func TestTuneHoldoutReport(t *testing.T) {
	t.Parallel()
	samples := workload(300)
	rep, err := Router(samples, Config{Seed: 5, Folds: 4})
	if err != nil {
		t.Fatal(err)
	}
	h := &rep.Holdout
	if rep.Calibrated+rep.Held != 300 || h.N != rep.Held {
		t.Errorf("sizes: %d + %d, holdout n %d", rep.Calibrated, rep.Held, h.N)
	}
	// The matrix adds up to the holdout and to the misroute counts.
	n := 0
	for c := range numClasses {
		n += h.Matrix.Small[c].N + h.Matrix.Large[c].N
	}
	if n != h.N {
		t.Errorf("matrix holds %d requests; want %d", n, h.N)
	}
	if got := h.Matrix.Small[classLargeOnly].N; got != h.Misroutes.Under {
		t.Errorf("matrix under %d; misroutes under %d", got, h.Misroutes.Under)
	}
	if got := h.Matrix.Large[classBoth].N + h.Matrix.Large[classSmallOnly].N; got != h.Misroutes.Over {
		t.Errorf("matrix over %d; misroutes over %d", got, h.Misroutes.Over)
	}
	if got := len(h.Misrouted); got != h.Misroutes.Under+h.Misroutes.Over+h.Misroutes.Hopeless {
		t.Errorf("listed %d misrouted tasks; want %d", got, h.Misroutes.Under+h.Misroutes.Over+h.Misroutes.Hopeless)
	}
	if h.PassLoss != h.PassAllLarge-h.Pass || h.Paired.PassDiff != h.Pass-h.PassAllLarge {
		t.Errorf("pass loss %d, paired diff %d, pass %d, all-large %d", h.PassLoss, h.Paired.PassDiff, h.Pass, h.PassAllLarge)
	}
	if !(h.Paired.PassCI[0] <= float64(h.Paired.PassDiff) && float64(h.Paired.PassDiff) <= h.Paired.PassCI[1]) {
		t.Errorf("pass diff %d outside its interval %v", h.Paired.PassDiff, h.Paired.PassCI)
	}
	if h.Recovery.Recovered > h.Recovery.SentLarge || h.Recovery.SentLarge > h.Recovery.SmallFails {
		t.Errorf("recovery %+v not nested", h.Recovery)
	}
	if len(h.Curve) != len(rep.Sweep) {
		t.Errorf("curve has %d points; want one per sweep point (%d)", len(h.Curve), len(rep.Sweep))
	}
	if rep.Folds == nil || len(rep.Folds.Runs) != 4 || rep.Folds.Runs[0].Threshold != rep.Threshold {
		t.Errorf("folds %+v; want 4 runs, the first the reported choice %v", rep.Folds, rep.Threshold)
	}
	// Determinism: the same config gives the same report.
	again, _ := Router(samples, Config{Seed: 5, Folds: 4})
	if !reflect.DeepEqual(rep, again) {
		t.Errorf("Router is not deterministic")
	}
}

func TestRandomBaselineBounds(t *testing.T) {
	t.Parallel()
	s := workload(90)
	idx := make([]int, len(s))
	allSmall, allLarge := 0, 0
	for i := range s {
		idx[i] = i
		if s[i].Small.Pass {
			allSmall++
		}
		if s[i].Large.Pass {
			allLarge++
		}
	}
	for _, tc := range []struct {
		k    int
		pass float64
		cost Figure
	}{{0, float64(allSmall), 90}, {90, float64(allLarge), 900}} {
		rb := randomBaseline(router.PolicyThreshold, s, idx, tc.k, 20, 1)
		if rb.PassMean != tc.pass || rb.CostMean != tc.cost || rb.PassMin != rb.PassMax {
			t.Errorf("k=%d: got %+v; want pass %v cost %v every time", tc.k, rb, tc.pass, tc.cost)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{Holdout: 1.5}, {Folds: -1}, {Rule: Rule{MaxPassLoss: -1}}, {Rule: Rule{Budget: math.Inf(1)}}, {Policies: []string{"magic"}},
	} {
		if _, err := Router(workload(30), cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v; want ErrConfig", cfg, err)
		}
	}
}

func TestWriteTextAndSVG(t *testing.T) {
	t.Parallel()
	rep, err := Router(workload(300), Config{Seed: 2, Folds: 2})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"threshold router", "cascade", "holdout (", "all-large", "all-small", "random @", "misroute matrix",
		"hard-sample recovery", "drift", "bootstrap 95%", "verdict:", "folds (2 splits", "Pareto frontier"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	for _, p := range []*PolicyReport{&rep.PolicyReport, rep.Cascade} {
		var svg bytes.Buffer
		if err := p.WriteSVG(&svg, "a <title> & more"); err != nil {
			t.Fatal(err)
		}
		dec := xml.NewDecoder(&svg)
		paths, title := 0, false
		for {
			tok, err := dec.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: SVG is not well-formed XML: %v", p.Policy, err)
			}
			switch tok := tok.(type) {
			case xml.StartElement:
				if tok.Name.Local == "path" {
					paths++
				}
			case xml.CharData:
				title = title || string(tok) == "a <title> & more"
			}
		}
		// Every point of both curves is a glyph (a path), and so are the
		// chosen point twice and the three baselines.
		if want := 2*len(p.Sweep) + 5; paths < want {
			t.Errorf("%s: %d paths; want at least %d (both curves, the chosen point twice, the baselines)", p.Policy, paths, want)
		}
		if !title {
			t.Errorf("%s: the title is not in the SVG as text", p.Policy)
		}
	}
}

// A fold summary states every fold's holdout loss as it is, and under a
// budget rule counts the folds within the budget, never "within the
// allowed loss" (a budget allows no loss figure).
func TestFoldsStateHoldoutLosses(t *testing.T) {
	t.Parallel()
	samples := workload(300)
	for _, tc := range []struct {
		name string
		rule Rule
		want string
	}{
		{"max pass loss", Rule{MaxPassLoss: 0}, "within the allowed loss on the holdout in"},
		{"budget", Rule{Budget: 0.5}, "within the budget per request on the holdout in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, err := Router(samples, Config{Seed: 3, Folds: 3, Rule: tc.rule})
			if err != nil {
				t.Fatal(err)
			}
			f := rep.Folds
			if (f.Within == nil) == (tc.rule.Budget == 0) || (f.WithinBudget == nil) == (tc.rule.Budget > 0) {
				t.Fatalf("within %v, within budget %v; want only the count of the rule in force", f.Within, f.WithinBudget)
			}
			var b strings.Builder
			if err := rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			losses := fmt.Sprintf("holdout pass loss per fold: %d, %d, %d", f.Runs[0].PassLoss, f.Runs[1].PassLoss, f.Runs[2].PassLoss)
			if !strings.Contains(b.String(), tc.want) || !strings.Contains(b.String(), losses) {
				t.Errorf("report lacks %q or %q:\n%s", tc.want, losses, b.String())
			}
			if tc.rule.Budget > 0 && strings.Contains(b.String(), "within the allowed loss") {
				t.Errorf("a budget rule's folds claim an allowed loss:\n%s", b.String())
			}
		})
	}
}

// A cascade reads no score: its misrouted tasks are explained by what it
// read of the small model's answer, never by a scorer's features.
func TestCascadeExplainsByConfidence(t *testing.T) {
	t.Parallel()
	samples := workload(300)
	for i := range samples {
		samples[i].Why = []router.Contribution{{Feature: "lang=en", Logit: -1}}
	}
	rep, err := Router(samples, Config{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Cascade == nil || len(rep.Cascade.Holdout.Misrouted) == 0 {
		t.Fatalf("cascade %+v; want misrouted tasks", rep.Cascade)
	}
	for _, m := range rep.Cascade.Holdout.Misrouted {
		if !strings.HasPrefix(m.Features, "small ") {
			t.Errorf("cascade misroute %s explained by %q; want the small model's answer", m.ID, m.Features)
		}
	}
	for _, m := range rep.Holdout.Misrouted {
		if m.Features != "lang=en -1.00" {
			t.Errorf("router misroute %s explained by %q; want the scorer's explanation", m.ID, m.Features)
		}
	}
}
