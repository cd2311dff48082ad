package capacity

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval"
	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/splitmix"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/stack"
)

// base is an experiment without a sweep section; tests append theirs.
const base = `name: t
tasks: embedded:tasks.jsonl
contract: embedded:triage.schema.json
seed: 1
time_scale: 0.05
arrival: {pattern: constant, rate: 10}
models:
  - name: large
    kind: large
    capacity: {slots: 8}
arms:
  - name: baseline
    model: large
  - name: cached
    model: large
    cache: {key: full}
`

func setupOf(t *testing.T, text string) (*eval.Setup, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "exp.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return eval.LoadSetup(p, fixtures.FS)
}

// Bad sweep sections are refused before anything is sent, naming the
// file, the line and the field, as bad input (exit 2).
func TestLoadConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, sweep string
		line        int
		field, msg  string
	}{
		{"no section", "", 0, "sweep", "no sweep section"},
		{"not increasing", "sweep:\n  rates: [2, 4, 4]\n  slo: {e2e_ms: 100}\n", 18, "sweep.rates", "must increase"},
		{"decreasing range", "sweep:\n  from: 8\n  to: 2\n  steps: 3\n  slo: {e2e_ms: 100}\n", 19, "sweep.to", "must increase"},
		{"share zero", "sweep:\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n  share: 0\n", 20, "sweep.share", "(0, 1]"},
		{"share above one", "sweep:\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n  share: 1.5\n", 20, "sweep.share", "(0, 1]"},
		{"no slo", "sweep:\n  rates: [2, 4]\n", 18, "sweep.slo", "needs an SLO"},
		{"empty slo", "sweep:\n  rates: [2, 4]\n  slo: {}\n", 19, "sweep.slo", "needs an SLO"},
		{"no ladder", "sweep:\n  slo: {e2e_ms: 100}\n", 18, "sweep.rates", "needs its ladder"},
		{"unknown field", "sweep:\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n  rate: 3\n", 20, "sweep.rate", "unknown field"},
		{"unknown slo field", "sweep:\n  rates: [2, 4]\n  slo: {p95_ms: 100}\n", 19, "sweep.slo.p95_ms", "unknown field"},
		{"unknown arm", "sweep:\n  arms: [baseline, nope]\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n", 18, "sweep.arms", `no arm "nope"`},
		{"bad count", "sweep:\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n  count: all\n", 20, "sweep.count", "answered or passing"},
		{"too many requests", "sweep:\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n  requests: 100000\n", 20, "sweep.requests", "tasks"},
		{"not a number", "sweep:\n  rates: [2, x]\n  slo: {e2e_ms: 100}\n", 18, "sweep", "cannot unmarshal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := setupOf(t, base+tc.sweep)
			if err != nil {
				t.Fatal(err)
			}
			_, err = LoadConfig(s)
			var ie *records.InputError
			if !errors.As(err, &ie) || !errors.Is(err, records.ErrBadInput) {
				t.Fatalf("got %v; want an input error", err)
			}
			if ie.Line != tc.line || ie.Field != tc.field || !strings.Contains(ie.Msg, tc.msg) || !strings.HasSuffix(ie.File, "exp.yaml") {
				t.Errorf("got %s (line %d, field %q); want line %d, field %q, a message with %q", err, ie.Line, ie.Field, tc.line, tc.field, tc.msg)
			}
		})
	}
}

func TestLoadConfigTimeScaleZero(t *testing.T) {
	t.Parallel()
	s, err := setupOf(t, strings.Replace(base, "time_scale: 0.05", "time_scale: 0", 1)+"sweep:\n  rates: [2, 4]\n  slo: {e2e_ms: 100}\n")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(s)
	var ie *records.InputError
	if !errors.As(err, &ie) || ie.Field != "time_scale" {
		t.Errorf("got %v; want an input error on time_scale", err)
	}
}

func TestLoadConfigDefaults(t *testing.T) {
	t.Parallel()
	s, err := setupOf(t, base+"sweep:\n  from: 2\n  to: 32\n  steps: 5\n  geometric: true\n  slo: {ttft_ms: 500}\n")
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{2, 4, 8, 16, 32}
	for i, r := range c.Rates {
		if math.Abs(r-want[i]) > 1e-9 {
			t.Errorf("rate %d: got %v; want %v", i, r, want[i])
		}
	}
	if c.share() != DefaultShare || c.Blocks != DefaultBlocks || c.refine() != DefaultRefine || c.Count != CountAnswered ||
		c.Requests != len(s.Tasks) || strings.Join(c.Arms, ",") != "baseline,cached" {
		t.Errorf("got %+v; want the defaults", c)
	}
	if got := Ladder(10, 40, 4, false); got[1] != 20 || got[3] != 40 {
		t.Errorf("linear ladder: got %v; want 10, 20, 30, 40", got)
	}
}

// rungsOf makes rungs at rates whose measured blocks count shares[i] of
// 100 requests each.
func rungsOf(rates []float64, shares [][]float64) []Rung {
	out := make([]Rung, len(rates))
	for i, r := range rates {
		out[i].Rate = r
		n, c := 0, 0
		for _, s := range shares[i] {
			k := int(math.Round(s * 100))
			out[i].Blocks = append(out[i].Blocks, BlockCount{N: 100, Counted: k})
			n += 100
			c += k
		}
		out[i].Share = float64(c) / float64(n)
	}
	return out
}

func TestKneeOf(t *testing.T) {
	t.Parallel()
	share := func(r []Rung) func(int) float64 { return func(i int) float64 { return r[i].Share } }
	r := rungsOf([]float64{10, 20, 30}, [][]float64{{1, 1}, {1, 1}, {0.5, 0.5}})
	k, where := kneeOf(r, 0.99, 100, share(r))
	// From 100% at 20/s to 50% at 30/s, 99% is crossed a fiftieth of the way.
	if where != kneeInside || math.Abs(k-20.2) > 1e-9 {
		t.Errorf("got %v (%d); want 20.2 inside the ladder", k, where)
	}
	for i := range r {
		r[i].Held = r[i].Share >= 0.99
	}
	if lo, hi, ok := bracket(r); !ok || lo != 20 || hi != 30 {
		t.Errorf("bracket: got %v, %v, %v; want 20, 30", lo, hi, ok)
	}
	r = rungsOf([]float64{10, 20}, [][]float64{{0.5, 0.5}, {0.4, 0.4}})
	if _, where := kneeOf(r, 0.99, 100, share(r)); where != kneeBelow {
		t.Errorf("got %d; want below the ladder", where)
	}
	r = rungsOf([]float64{10, 20}, [][]float64{{1, 1}, {1, 1}})
	if k, where := kneeOf(r, 0.99, 100, share(r)); where != kneeAbove || !math.IsInf(k, 1) {
		t.Errorf("got %v (%d); want above the ladder", k, where)
	}
	// The first rung that does not hold decides, as the knee is where the
	// share stays at or above the declared one.
	r = rungsOf([]float64{10, 20, 30}, [][]float64{{1, 1}, {0.9, 0.9}, {1, 1}})
	if k, _ := kneeOf(r, 0.99, 100, share(r)); k >= 20 {
		t.Errorf("got %v; want a knee below 20, where the share first fell", k)
	}
	// A queue that grows through the rung fails it whatever its share:
	// from 20 ms of growth at 10/s to 120 ms at 20/s, the limit of 100 ms
	// is crossed at 18/s.
	r = rungsOf([]float64{10, 20}, [][]float64{{1, 1}, {1, 1}})
	r[0].GrowthMs, r[1].GrowthMs, r[1].Growing = 20, 120, true
	if k, where := kneeOf(r, 0.99, 100, share(r)); where != kneeInside || math.Abs(k-18) > 1e-9 {
		t.Errorf("growing queue: got %v (%d); want 18 inside the ladder", k, where)
	}
}

// The interval comes from the blocks' spread: rungs whose blocks disagree
// give a wider interval than rungs whose blocks agree, and the same seed
// gives the same interval.
func TestKneeInterval(t *testing.T) {
	t.Parallel()
	steady := rungsOf([]float64{10, 20, 30}, [][]float64{{1, 1, 1, 1}, {0.99, 0.99, 0.99, 0.99}, {0.6, 0.6, 0.6, 0.6}})
	noisy := rungsOf([]float64{10, 20, 30}, [][]float64{{1, 1, 1, 1}, {1, 0.96, 1, 1}, {0.9, 0.3, 0.9, 0.3}})
	width := func(r []Rung) (float64, float64, float64) {
		lo, hi := interval(kneeSamples(r, 0.95, 100, 1000, splitmix.New(3)))
		if lo == nil || hi == nil {
			t.Fatalf("got an open interval for %v", r)
		}
		return *lo, *hi, *hi - *lo
	}
	lo1, hi1, w1 := width(steady)
	lo2, hi2, w2 := width(noisy)
	if !(w2 > w1) {
		t.Errorf("steady blocks: [%v, %v]; noisy blocks: [%v, %v]; want the noisy interval wider", lo1, hi1, lo2, hi2)
	}
	if l, h, _ := width(noisy); l != lo2 || h != hi2 {
		t.Errorf("same seed: got [%v, %v] then [%v, %v]; want the same", lo2, hi2, l, h)
	}
	k, _ := kneeOf(noisy, 0.95, 100, func(i int) float64 { return noisy[i].Share })
	if !(lo2 <= k && k <= hi2) {
		t.Errorf("knee %v outside its interval [%v, %v]", k, lo2, hi2)
	}
}

func TestReplicas(t *testing.T) {
	t.Parallel()
	k := 40.0
	if n := replicas(100, &k); n == nil || *n != 3 {
		t.Errorf("got %v; want ceil(100/40) = 3", n)
	}
	k = 25
	if n := replicas(100, &k); n == nil || *n != 4 {
		t.Errorf("got %v; want exactly 4", n)
	}
	if replicas(0, &k) != nil || replicas(100, nil) != nil {
		t.Error("want no replicas without a peak or a knee")
	}
	n := 4
	if c := times(&n, 2.5); c == nil || *c != 10 {
		t.Errorf("got %v; want 10 per hour", c)
	}
	if times(&n, 0) != nil {
		t.Error("want no cost without a price")
	}
}

// SimKnee follows the capacity arithmetic: with one call per request of
// 100 tokens in and 50 out on the large model (base 150ms, 0.2ms per token
// in, 8ms per token out, a 2% tail three times slower), 4 slots and a
// slowdown of 0.1, a request holds a slot for
// 1.04 × (0.15 + 0.02 + 0.4 × 1.3) = 0.7176 s, so 4 slots serve 5.574/s.
func TestSimKnee(t *testing.T) {
	t.Parallel()
	models := []stack.ModelSpec{{Name: "large", Kind: sim.KindLarge, Capacity: &sim.Capacity{Slots: 4, Slowdown: 0.1}}}
	calls := make([]sim.Call, 10)
	for i := range calls {
		calls[i] = sim.Call{Model: "large", TokensIn: 100, TokensOut: 50}
	}
	calls = append(calls, sim.Call{Model: "large", TokensIn: 100, Fault: sim.FaultError})
	want := 4 / (1.04 * (0.15 + 0.02 + 0.4*1.3))
	if got := SimKnee(calls, 10, models, 0); math.Abs(got-want) > 1e-9 {
		t.Errorf("got %v; want %v", got, want)
	}
	// Half the requests answered by a cache: twice the rate.
	if got := SimKnee(calls[:5], 10, models, 0); math.Abs(got-2*want) > 1e-9 {
		t.Errorf("half the calls: got %v; want %v", got, 2*want)
	}
	// A concurrency of 2 runs at most 2 of the 4 slots.
	want2 := 2 / (1.04 * (0.15 + 0.02 + 0.4*1.1))
	if got := SimKnee(calls, 10, models, 2); math.Abs(got-want2) > 1e-9 {
		t.Errorf("concurrency 2: got %v; want %v", got, want2)
	}
	if got := SimKnee(calls, 10, []stack.ModelSpec{{Name: "large", Kind: sim.KindLarge}}, 0); !math.IsNaN(got) {
		t.Errorf("no capacity: got %v; want NaN", got)
	}
}

func TestDecideCapacity(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	bk, ck := 10.0, 13.0
	base, cand := &ArmResult{Name: "baseline", Knee: &bk}, &ArmResult{Name: "c", Knee: &ck}
	ok := &analysis.ArmSummary{Verdict: analysis.VerdictNoGain}
	for _, tc := range []struct {
		name            string
		q               *analysis.ArmSummary
		ratio, lo, hi   *float64
		verdict, reason string
		change          bool
	}{
		{"more", ok, f(1.3), f(1.1), f(1.5), analysis.VerdictAccept, "sustains more", false},
		{"less", ok, f(0.7), f(0.6), f(0.9), analysis.VerdictReject, "sustains less", false},
		{"unclear", ok, f(1.1), f(0.95), f(1.25), analysis.VerdictInconclusive, "holds 1", true},
		{"quality first", &analysis.ArmSummary{Verdict: analysis.VerdictReject, Reasons: []string{"loses passing tasks"}},
			f(2), f(1.8), f(2.2), analysis.VerdictReject, "quality gate: loses passing tasks", false},
		{"quality unclear", &analysis.ArmSummary{Verdict: analysis.VerdictInconclusive, Reasons: []string{"too few tasks"}},
			f(2), f(1.8), f(2.2), analysis.VerdictInconclusive, "quality gate: too few tasks", false},
	} {
		v := Verdict{Arm: "c", Ratio: tc.ratio, RatioLo: tc.lo, RatioHi: tc.hi}
		decideCapacity(&v, tc.q, cand, base)
		if v.Verdict != tc.verdict || !strings.Contains(strings.Join(v.Reasons, "; "), tc.reason) || (v.Change != "") != tc.change {
			t.Errorf("%s: got %s %q (change %q); want %s with %q", tc.name, v.Verdict, v.Reasons, v.Change, tc.verdict, tc.reason)
		}
	}
	v := Verdict{Arm: "c", Ratio: f(1.1), RatioLo: f(0.95), RatioHi: f(1.25)}
	decideCapacity(&v, ok, cand, base)
	// With the same spread (0.15 below the ratio), accept needs a ratio of
	// 1.15: a candidate knee above 11.5/s.
	if !strings.Contains(v.Change, "above 11.5/s") {
		t.Errorf("got %q; want the knee that would accept, 11.5/s", v.Change)
	}
}

// simSweep loads testdata/sim.yaml and its sweep section.
func simSweep(t *testing.T) (*eval.Setup, *Config) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "sim.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := setupOf(t, string(raw))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// A sweep on the simulated capacity model: every scheduled request is
// recorded once per rung, each arm's knee lies near the rate the model's
// parameters imply, the scoped cache sustains more than the baseline, and
// the run directory holds the records, the figures and the page.
func TestSweepSim(t *testing.T) {
	// Not parallel: the other tests' work would take the CPU the
	// simulated latency is measured on.
	if testing.Short() {
		t.Skip("plays a sweep on the simulated models (a few seconds)")
	}
	s, cfg := simSweep(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := Sweep(ctx, s, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	defer t.Log(text.String())
	sent := 0
	for _, a := range res.Arms {
		for _, r := range a.Rungs {
			sent += r.Sent
		}
		if a.Knee == nil || a.ImpliedKnee == nil {
			t.Fatalf("%s: knee %v, implied %v; want both inside the ladder (%s)", a.Name, rateP(a.Knee), rateP(a.ImpliedKnee), a.KneeNote)
		}
		// The ladder is coarse (8/s steps, one halving) and the test
		// machine shared: a generous bound here; bench/capacity.sh
		// measures the 10% on finer ladders.
		if d := math.Abs(*a.Knee / *a.ImpliedKnee - 1); d > 0.3 {
			t.Errorf("%s: knee %.2f/s, implied %.2f/s; want within 30%%", a.Name, *a.Knee, *a.ImpliedKnee)
		}
	}
	if len(res.Records) != sent {
		t.Errorf("got %d records for %d scheduled requests; want one each", len(res.Records), sent)
	}
	if *res.Arms[1].Knee <= *res.Arms[0].Knee {
		t.Errorf("cache knee %.2f/s, baseline %.2f/s; want the cache to sustain more", *res.Arms[1].Knee, *res.Arms[0].Knee)
	}
	if len(res.Candidates) != 1 || res.Candidates[0].Verdict == "" || res.Candidates[0].Quality == "" {
		t.Errorf("got candidates %+v; want one verdict with the quality gate's", res.Candidates)
	}
	if r := res.Arms[0].Replicas; r == nil || *r != int(math.Ceil(100 / *res.Arms[0].Knee)) {
		t.Errorf("got %v replicas; want ceil(100 / knee)", r)
	}
	dir := t.TempDir()
	if err := res.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "sweep.html"))
	if err != nil || strings.Count(string(page), "<svg") != 2 {
		t.Errorf("sweep.html: %v; want the two charts", err)
	}
	set, err := records.ReadSet([]string{filepath.Join(dir, "records.jsonl")}, nil)
	if err != nil || set.Len() != sent {
		t.Errorf("records.jsonl: %v; want %d records", err, sent)
	}
	if _, err := os.Stat(filepath.Join(dir, "sweep.json")); err != nil {
		t.Error(err)
	}
}

// A candidate whose knee lies above its ladder in some resamples still
// bounds the ratio from below, by its highest rung; the upper end is then
// unbounded, and nothing is infinite in the figures.
func TestRatioIntervalBeyondLadder(t *testing.T) {
	t.Parallel()
	base := []Rung{{Rate: 10}, {Rate: 20}}
	cand := []Rung{{Rate: 10}, {Rate: 40}}
	b := []float64{15, 15, 16, 16}
	c := []float64{math.Inf(1), 30, math.Inf(1), 32}
	lo, hi := ratioInterval(c, b, cand, base)
	if lo == nil || *lo != 2 || hi != nil {
		t.Errorf("got [%v, %v]; want [2 (30/s over 15/s), unbounded]", rateP(lo), rateP(hi))
	}
	lo, hi = ratioInterval([]float64{0, 0}, []float64{0, 0}, cand, base)
	if lo != nil || hi != nil {
		t.Errorf("both below the ladder: got [%v, %v]; want nothing known", rateP(lo), rateP(hi))
	}
}

// Run refuses an experiment without a sweep section as bad input, before
// anything is sent or written.
func TestRunBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "exp.yaml")
	if err := os.WriteFile(p, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	var stdout, stderr strings.Builder
	err := Run(context.Background(), Options{ExperimentPath: p, Embedded: fixtures.FS, OutDir: out}, &stdout, &stderr)
	if !errors.Is(err, records.ErrBadInput) || !strings.Contains(err.Error(), "sweep") {
		t.Errorf("got %v; want a bad-input error naming the sweep section", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) || stdout.Len() > 0 {
		t.Errorf("wrote %q and %v; want nothing", stdout.String(), err)
	}
	if err := Run(context.Background(), Options{}, &stdout, &stderr); !errors.Is(err, records.ErrBadInput) {
		t.Errorf("no experiment: got %v; want a bad-input error", err)
	}
}

// A request counts when answered within the SLO in the models' time (at
// time scale 0.1 a recorded 150 ms is 1500 ms); with count passing it must
// pass too. A failed or cancelled request never counts.
func TestCounts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, count string
		rec         records.Record
		want        bool
	}{
		{"answered in time", CountAnswered, records.Record{Outcome: records.OutcomeOK, TTFTMs: 50, E2EMs: 150}, true},
		{"answered late", CountAnswered, records.Record{Outcome: records.OutcomeOK, TTFTMs: 50, E2EMs: 250}, false},
		{"first byte late", CountAnswered, records.Record{Outcome: records.OutcomeOK, TTFTMs: 120, E2EMs: 150}, false},
		{"refused answer in time", CountAnswered, records.Record{Outcome: records.OutcomeContractFail, TTFTMs: 50, E2EMs: 150}, true},
		{"timeout", CountAnswered, records.Record{Outcome: records.OutcomeTimeout, E2EMs: 150}, false},
		{"cancelled", CountAnswered, records.Record{Outcome: records.OutcomeCancelled}, false},
		{"passing in time", CountPassing, records.Record{Outcome: records.OutcomeOK, Pass: true, TTFTMs: 50, E2EMs: 150}, true},
		{"not passing", CountPassing, records.Record{Outcome: records.OutcomeOK, TTFTMs: 50, E2EMs: 150}, false},
	} {
		w := &sweeper{cfg: &Config{Count: tc.count, SLO: analysis.SLO{TTFTMs: 1000, E2EMs: 2000}}, scale: 0.1}
		if got := w.counts(&tc.rec); got != tc.want {
			t.Errorf("%s: got %v; want %v", tc.name, got, tc.want)
		}
	}
}

// TestRungCostUnmeasured: a rung with a request whose cost is unmeasured
// (a call to a model without a price) has no cost (null), not the sum of
// the others'.
func TestRungCostUnmeasured(t *testing.T) {
	t.Parallel()
	w := &sweeper{cfg: &Config{Requests: 2, Blocks: 2, SLO: analysis.SLO{TTFTMs: 1000, E2EMs: 2000}}, scale: 0.1}
	priced := records.Record{Seq: 0, Outcome: records.OutcomeOK, Pass: true, Cost: 0.5, E2EMs: 10}
	if r := w.rung([]records.Record{priced, {Seq: 1, Outcome: records.OutcomeOK, Cost: 0.25, E2EMs: 10}}, 1, 0, nil); r.Cost == nil || *r.Cost != 0.75 {
		t.Errorf("priced rung: cost %v; want 0.75", r.Cost)
	}
	unpriced := records.Record{Seq: 1, Outcome: records.OutcomeOK, E2EMs: 10, Unmeasured: []string{records.FigureCost}}
	if r := w.rung([]records.Record{priced, unpriced}, 1, 0, nil); r.Cost != nil {
		t.Errorf("rung with an unpriced request: cost %v; want nil", *r.Cost)
	}
}

// A rung on which crab failed a request on a bug of its own ends the sweep
// with that error: such a failure is no measure of the arm's capacity, so
// it is never counted as one of the arm's misses.
func TestSweepEndsOnABug(t *testing.T) {
	if testing.Short() {
		t.Skip("plays a rung on the simulated models")
	}
	s, cfg := simSweep(t)
	bugTask := s.Tasks[3].ID
	hook := func(arm string, next model.Model) model.Model {
		return model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
			if req.TaskID == bugTask {
				var none []int
				_ = none[len(req.TaskID)]
			}
			return next.Complete(ctx, req)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := sweep(ctx, s, cfg, nil, hook)
	if err == nil || !strings.Contains(err.Error(), "no knee is drawn from a rung on which 1 requests failed on a bug in crab") ||
		!strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("sweep: %v (result %v); want the error naming crab's bug", err, res != nil)
	}
}
