package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/crab-testbed/crab/eval/internal/figure"
)

// pairRecs builds a baseline and a candidate over n tasks from per-task
// latencies and costs; every request is ok and passes.
func pairRecs(base, cand []float64, baseCost, candCost []float64) []Record {
	var recs []Record
	for i := range base {
		id := fmt.Sprintf("t%03d", i)
		recs = append(recs,
			Record{Arm: "baseline", TaskID: id, E2EMs: base[i], Outcome: OutcomeOK, Pass: true, ContractOK: true, Cost: baseCost[i]},
			Record{Arm: "cand", TaskID: id, E2EMs: cand[i], Outcome: OutcomeOK, Pass: true, ContractOK: true, Cost: candCost[i]})
	}
	return recs
}

func repeatVal(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

var (
	pairRE   = regexp.MustCompile(`(p95|cost per pass) (-?[0-9.e+-]+) vs (-?[0-9.e+-]+)(?: ms)?( \([+-][0-9.]+%\))?`)
	ciRE     = regexp.MustCompile(`95% CI (-?[0-9.e+-]+) to (-?[0-9.e+-]+)`)
	numOrNaN = func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return math.NaN()
		}
		return v
	}
)

// looseGate lets every comparison of equal passes through to the
// objective: no guardrail, one pair enough.
var looseGate = GateConfig{Rule: RuleNet, MinPairs: 1, P95RegressPct: f64p(1e300), CostPerPassRegressPct: f64p(1e300)}

// reasonAbout returns a's reason on latency (naming p95) or cost (naming
// cost per pass).
func reasonAbout(t *testing.T, a *ArmSummary, what string) string {
	t.Helper()
	name := map[string]string{"latency": "p95 ", "cost": "cost per pass "}[what]
	for _, r := range a.Reasons {
		if strings.Contains(r, name) && strings.Contains(r, "95% CI") {
			return r
		}
	}
	t.Fatalf("%s has no %s reason among %q", a.Name, what, a.Reasons)
	return ""
}

// checkReason verifies a latency or cost reason against the unrounded
// figures it names: the direction word, the printed pair (order and
// percent change) and the printed interval's side of zero.
func checkReason(t *testing.T, reason string, d *Delta, a, b float64) {
	t.Helper()
	m := pairRE.FindStringSubmatch(reason)
	if m == nil {
		t.Fatalf("reason %q names no pair", reason)
	}
	pa, pb := numOrNaN(m[2]), numOrNaN(m[3])
	if cmpFloat(pa, pb) != cmpFloat(a, b) {
		t.Errorf("reason %q prints %v vs %v; the figures are %v vs %v", reason, pa, pb, a, b)
	}
	if m[4] != "" && m[4] != figure.RelChange(a, b) {
		t.Errorf("reason %q prints change %q; the figures give %q", reason, m[4], figure.RelChange(a, b))
	}
	if m[4] != "" && figure.RelChange(pa, pb) != figure.RelChange(a, b) {
		t.Errorf("reason %q: the printed figures give %q, the reason says %q", reason, figure.RelChange(pa, pb), m[4])
	}
	ci := ciRE.FindStringSubmatch(reason)
	if ci == nil {
		t.Fatalf("reason %q prints no interval", reason)
	}
	lo, hi := numOrNaN(ci[1]), numOrNaN(ci[2])
	better := strings.HasPrefix(reason, "faster") || strings.HasPrefix(reason, "cheaper")
	worse := strings.HasPrefix(reason, "slower") || strings.HasPrefix(reason, "more expensive")
	switch {
	case better:
		if !(d.CIHigh < 0) || !(hi < 0) {
			t.Errorf("reason %q says better; interval %v to %v (printed %v to %v)", reason, d.CILow, d.CIHigh, lo, hi)
		}
		if !strings.Contains(reason, "per task") && !(a < b) {
			t.Errorf("reason %q calls the named figure better; it is %v vs %v", reason, a, b)
		}
	case worse:
		if !(d.CILow > 0) || !(lo > 0) {
			t.Errorf("reason %q says worse; interval %v to %v (printed %v to %v)", reason, d.CILow, d.CIHigh, lo, hi)
		}
		if !strings.Contains(reason, "per task") && !(a > b) {
			t.Errorf("reason %q calls the named figure worse; it is %v vs %v", reason, a, b)
		}
	default:
		if !(d.CILow <= 0 && d.CIHigh >= 0) {
			t.Errorf("reason %q says no clear difference; interval %v to %v excludes 0", reason, d.CILow, d.CIHigh)
		}
	}
}

// For random arms, at every magnitude from sub-microsecond to seconds,
// every reason's direction and printed figures agree with the unrounded
// figures it names.
func TestReasonsAgreeWithUnroundedFigures(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(17, 29))
	kinds := map[string]int{}
	for iter := range 300 {
		n := 2 + rng.IntN(40)
		scale := math.Pow(10, -4+rng.Float64()*7) // 1e-4 .. 1e3 ms
		shift := (rng.Float64() - 0.5) * scale * 0.02 * float64(rng.IntN(3))
		cscale := math.Pow(10, -6+rng.Float64()*6)
		base, cand := make([]float64, n), make([]float64, n)
		bc, cc := make([]float64, n), make([]float64, n)
		for i := range base {
			base[i] = scale * (1 + rng.Float64())
			cand[i] = base[i] + shift + scale*0.001*rng.NormFloat64()*float64(rng.IntN(2))
			if cand[i] < 0 {
				cand[i] = 0
			}
			bc[i] = cscale * (1 + 0.01*rng.Float64())
			cc[i] = bc[i] * (1 + 0.002*(rng.Float64()-0.5)*float64(rng.IntN(3)))
		}
		s, err := summarizeRecs(pairRecs(base, cand, bc, cc), Options{Resamples: 200, Gate: &looseGate})
		if err != nil {
			t.Fatal(err)
		}
		b, a := &s.Arms[0], &s.Arms[1]
		if a.Verdict != VerdictAccept && a.Verdict != VerdictNoGain {
			t.Fatalf("iteration %d: verdict %s; want accept or no_gain (equal passes, no guardrail)", iter, a.Verdict)
		}
		checkReason(t, reasonAbout(t, a, "latency"), a.Paired.LatencyDeltaMs, a.P95Ms, b.P95Ms)
		checkReason(t, reasonAbout(t, a, "cost"), a.Paired.CostDelta, *a.CostPerPass, *b.CostPerPass)
		if t.Failed() {
			t.Fatalf("iteration %d (n %d, scale %g)", iter, n, scale)
		}
		for _, what := range []string{"latency", "cost"} {
			kinds[strings.SplitN(reasonAbout(t, a, what), ":", 2)[0]]++
		}
	}
	// The generator must reach every wording, or the checks above prove little.
	for _, k := range []string{"faster", "slower", "no clear latency difference", "cheaper", "more expensive", "no clear cost difference"} {
		if kinds[k] == 0 {
			t.Errorf("no reason worded %q in 300 random comparisons (got %v)", k, kinds)
		}
	}
}

// The cases that printed false statements: an interval that excludes zero
// shown as including it, a percent change on rounded figures.
func TestRoundingNeverChangesAStatement(t *testing.T) {
	t.Parallel()
	// 30 pairs, each candidate request 0.0004 ms slower.
	base := repeatVal(30, 0.001)
	cand := repeatVal(30, 0.0014)
	s, err := summarizeRecs(pairRecs(base, cand, repeatVal(30, 1), repeatVal(30, 1)), Options{Gate: &looseGate})
	if err != nil {
		t.Fatal(err)
	}
	if r := reasonAbout(t, &s.Arms[1], "latency"); !strings.HasPrefix(r, "slower: p95 0.0014 vs 0.001 ms (+40%)") || !strings.Contains(r, "95% CI 0.0004 to 0.0004") {
		t.Errorf("reason %q; want slower, with the figures and interval printed", r)
	}
	// Cost per pass 1.0051 vs 1.0049.
	if a, b := figure.CostPerPassPair(f64p(1.0051), f64p(1.0049)); a != "1.0051" || b != "1.0049" || figure.RelChange(1.0051, 1.0049) != " (+0.02%)" {
		t.Errorf("cost per pass printed %s vs %s%s; want 1.0051 vs 1.0049 (+0.02%%)", a, b, figure.RelChange(1.0051, 1.0049))
	}
	// 1,100 lost vs 1,009 gained: p just below 0.05.
	p := McNemarExact(1100, 1009)
	if !(p < figure.PThreshold) {
		t.Fatalf("McNemar p = %v; want below %v", p, figure.PThreshold)
	}
	if v := numOrNaN(figure.P(p)); !(v < figure.PThreshold) {
		t.Errorf("p %v printed %s, at or above %v", p, figure.P(p), figure.PThreshold)
	}
	if w := weakLoss(&ArmSummary{Name: "c", Paired: &Paired{Lost: make([]string, 1100), Gained: make([]string, 1009), McNemarP: p}}); w != "" {
		t.Errorf("weak-loss warning %q for p below %v", w, figure.PThreshold)
	}
}

// A p-value below the threshold never prints at or above it; a mean never
// prints outside its min and max; a non-zero figure never prints as 0.
func TestRenderedFiguresKeepTheirOrder(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	for range 20000 {
		p := figure.PThreshold * (1 - math.Pow(10, -1-rng.Float64()*12))
		if v := numOrNaN(figure.P(p)); !(v < figure.PThreshold) {
			t.Fatalf("p %v printed %s", p, figure.P(p))
		}
		scale := math.Pow(10, -6+rng.Float64()*9)
		vals := []float64{scale * rng.Float64(), scale * rng.Float64(), scale * rng.Float64()}
		lo, hi := min(vals[0], vals[1], vals[2]), max(vals[0], vals[1], vals[2])
		mean := meanWithin(vals[0]+vals[1]+vals[2], 3, lo, hi)
		for _, f := range []func(float64) string{figure.Ms, figure.Cost, figure.SmallMs} {
			pl, pm, ph := numOrNaN(f(lo)), numOrNaN(f(mean)), numOrNaN(f(hi))
			if pl > pm || pm > ph {
				t.Fatalf("min %v mean %v max %v printed %s %s %s", lo, mean, hi, f(lo), f(mean), f(hi))
			}
			if lo != 0 && pl == 0 {
				t.Fatalf("non-zero %v printed as %s", lo, f(lo))
			}
		}
		if v := rng.Float64() * 1e-3; v != 0 && numOrNaN(strings.TrimSuffix(figure.Pct(v), "%")) == 0 {
			t.Fatalf("share %v printed %s", v, figure.Pct(v))
		}
	}
	// Equal values: the mean of identical figures is the figure.
	if m := meanWithin(0.1+0.1+0.1, 3, 0.1, 0.1); m != 0.1 {
		t.Errorf("mean of three 0.1 = %v; want 0.1", m)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
