package eval

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
)

const minimalExperiment = `name: t
tasks: tasks.jsonl
contract: c.json
arrival: {pattern: constant, rate: 10}
models:
  - {name: small, kind: small}
  - {name: large, kind: large}
arms:
  - name: baseline
    model: large
  - name: router
    router: {threshold: 0.5, small: small, large: large}
`

func TestParseExperimentDefaults(t *testing.T) {
	t.Parallel()
	e, err := ParseExperiment([]byte(minimalExperiment), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if e.Repeats != 1 || e.Concurrency != 64 || e.Timeout.Std() != 30*time.Second || e.Retry.MaxAttempts != 1 || *e.TimeScale != 1 || !*e.Shadow {
		t.Errorf("defaults: got repeats=%d conc=%d timeout=%v attempts=%d scale=%v shadow=%v",
			e.Repeats, e.Concurrency, e.Timeout.Std(), e.Retry.MaxAttempts, *e.TimeScale, *e.Shadow)
	}
	if e.Order != OrderPaired || e.Block != 0 || e.BurnIn != 0 {
		t.Errorf("order: got %q block %v; want %q and no block", e.Order, e.Block.Std(), OrderPaired)
	}
	if e.Arms[0].Mode != "full" {
		t.Errorf("arm mode: got %q; want full", e.Arms[0].Mode)
	}
	if len(e.Hash) != 64 {
		t.Errorf("hash: got %q", e.Hash)
	}
}

func TestParseExperimentErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		edit      func(string) string
		wantLine  int
		wantField string
	}{
		{"unknown top-level field", func(s string) string { return strings.Replace(s, "name: t\n", "name: t\nbogus: 1\n", 1) }, 2, "bogus"},
		{"unknown arm field", func(s string) string {
			return strings.Replace(s, "    model: large\n", "    model: large\n    colour: red\n", 1)
		}, 11, "colour"},
		{"bad threshold", func(s string) string { return strings.Replace(s, "threshold: 0.5", "threshold: 1.5", 1) }, 12, "arms.router.threshold"},
		{"unknown model in arm", func(s string) string { return strings.Replace(s, "    model: large\n", "    model: huge\n", 1) }, 10, "arms.model"},
		{"bad pattern", func(s string) string { return strings.Replace(s, "constant", "sometimes", 1) }, 4, "arrival.pattern"},
		{"bad duration", func(s string) string { return s + "timeout: soon\n" }, 13, "timeout"},
		{"wrong type", func(s string) string { return strings.Replace(s, "name: t\n", "name: t\nrepeats: many\n", 1) }, 2, "repeats"},
		{"fault rate out of range", func(s string) string {
			return strings.Replace(s, "{name: small, kind: small}", "{name: small, kind: small, faults: {error: 2}}", 1)
		}, 6, "models.faults.error"},
		{"duplicate arm", func(s string) string { return strings.Replace(s, "name: router", "name: baseline", 1) }, 11, "arms.name"},
		{"unknown order", func(s string) string { return s + "order: shuffled\n" }, 13, "order"},
		{"unknown objective", func(s string) string { return s + "gate: {objective: speed}\n" }, 13, "gate.objective"},
		{"goodput without an SLO", func(s string) string { return s + "gate:\n  objective: goodput\n" }, 14, "gate.slo"},
		{"negative guardrail", func(s string) string { return s + "gate:\n  p95_regress_pct: -5\n" }, 14, "gate.p95_regress_pct"},
		{"zero timeout", func(s string) string { return s + "timeout: 0s\n" }, 13, "timeout"},
		{"bare zero timeout", func(s string) string { return s + "timeout: 0\n" }, 13, "timeout"},
		{"negative timeout", func(s string) string { return s + "timeout: -1s\n" }, 13, "timeout"},
		{"zero grader timeout", func(s string) string { return s + "grade:\n  command: {run: [true], timeout: 0s}\n" }, 14, "grade.command.timeout"},
		{"empty proof section", func(s string) string { return s + "proof: {min_overlap: 4}\n" }, 13, "proof"},
		{"block without switchback", func(s string) string { return s + "order: sequential\nblock: 1s\n" }, 14, "block"},
		{"burn-in without switchback", func(s string) string { return s + "order: paired\nburn_in: 50ms\n" }, 14, "burn_in"},
		{"block shorter than the arrival gap", func(s string) string { return s + "order: switchback\nblock: 50ms\n" }, 14, "block"},
		{"burn-in as long as the block", func(s string) string { return s + "order: switchback\nblock: 1s\nburn_in: 1s\n" }, 15, "burn_in"},
		{"switchback with one arm", func(s string) string {
			return strings.Replace(s, "  - name: router\n    router: {threshold: 0.5, small: small, large: large}\n", "", 1) + "order: switchback\n"
		}, 11, "order"},
		{"unknown control", func(s string) string { return s + "control: triplet\n" }, 13, "control"},
		{"twin beside an arm named twin", func(s string) string {
			return strings.Replace(s, "name: router", "name: twin", 1) + "control: twin\n"
		}, 13, "control"},
		{"unknown waiver", func(s string) string { return s + "gate: {waive: [latency]}\n" }, 13, "gate.waive"},
		{"negative rework cost", func(s string) string { return s + "rework:\n  cost_per_task: -2\n" }, 14, "rework.cost_per_task"},
		{"unknown rework field", func(s string) string { return s + "rework:\n  cost: 2\n" }, 14, "cost"},
		{"negative minimum effect", func(s string) string { return s + "gate: {min_effect_pct: -1}\n" }, 13, "gate.min_effect_pct"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := ParseExperiment([]byte(tc.edit(minimalExperiment)), "x.yaml")
			var ie *records.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("got %v; want *InputError", err)
			}
			if !errors.Is(err, records.ErrBadInput) {
				t.Errorf("errors.Is(ErrBadInput) false for %v", err)
			}
			if ie.File != "x.yaml" || ie.Line != tc.wantLine || (tc.wantField != "" && ie.Field != tc.wantField) {
				t.Errorf("got %s (line %d field %q); want line %d field %q", err, ie.Line, ie.Field, tc.wantLine, tc.wantField)
			}
		})
	}
}

func TestSchedule(t *testing.T) {
	t.Parallel()
	burst, _ := Schedule(Arrival{Pattern: "burst"}, 5, 1)
	for i, d := range burst {
		if d != 0 {
			t.Errorf("burst[%d] = %v; want 0", i, d)
		}
	}
	c, _ := Schedule(Arrival{Pattern: "constant", Rate: 4}, 5, 1)
	for i, d := range c {
		if want := time.Duration(i) * 250 * time.Millisecond; d != want {
			t.Errorf("constant[%d] = %v; want %v", i, d, want)
		}
	}
	const n = 20000
	p1, _ := Schedule(Arrival{Pattern: "poisson", Rate: 100}, n, 7)
	p2, _ := Schedule(Arrival{Pattern: "poisson", Rate: 100}, n, 7)
	p3, _ := Schedule(Arrival{Pattern: "poisson", Rate: 100}, n, 8)
	same, diff := true, false
	for i := range p1 {
		same = same && p1[i] == p2[i]
		diff = diff || p1[i] != p3[i]
		if i > 0 && p1[i] < p1[i-1] {
			t.Fatalf("poisson offsets not sorted at %d", i)
		}
	}
	if !same || !diff {
		t.Errorf("poisson: same seed equal = %v (want true), other seed differs = %v (want true)", same, diff)
	}
	// Mean gap of an exponential with rate 100/s is 10 ms; with 20000 gaps the
	// standard error is 10ms/sqrt(20000) ≈ 0.07 ms.
	mean := float64(p1[n-1]) / float64(n-1) / float64(time.Millisecond)
	if mean < 9.7 || mean > 10.3 {
		t.Errorf("poisson mean gap = %.3f ms; want 10 ± 0.3", mean)
	}
	if _, err := Schedule(Arrival{Pattern: "nope"}, 1, 1); err == nil {
		t.Error("unknown pattern: got nil error")
	}
}

// control: twin adds an identical copy of the baseline, named twin, and
// tells the gate which arm it is.
func TestParseExperimentTwin(t *testing.T) {
	t.Parallel()
	e, err := ParseExperiment([]byte(minimalExperiment+"control: twin\n"), "x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	last := e.Arms[len(e.Arms)-1]
	if len(e.Arms) != 3 || last.Name != "twin" || last.Model != e.Arms[0].Model || e.Gate.Control != "twin" {
		t.Errorf("arms %+v, gate control %q; want a third arm twin copying the baseline", e.Arms, e.Gate.Control)
	}
}

// The default order follows the models: paired where no model's latency
// can depend on load, switchback (with its block and burn-in) where one
// can; interleaved is read as switchback.
func TestParseExperimentOrder(t *testing.T) {
	t.Parallel()
	capacity := strings.Replace(minimalExperiment, "{name: large, kind: large}", "{name: large, kind: large, capacity: {slots: 4}}", 1)
	for _, tc := range []struct {
		name, file    string
		order         string
		block, burnIn time.Duration
	}{
		{"simulated models", minimalExperiment, OrderPaired, 0, 0},
		{"a simulated model with a capacity", capacity, OrderSwitchback, DefaultBlock, DefaultBurnIn},
		{"old name", minimalExperiment + "order: interleaved\nblock: 1s\n", OrderSwitchback, time.Second, DefaultBurnIn},
		{"no burn-in", capacity + "burn_in: 0s\n", OrderSwitchback, DefaultBlock, 0},
		{"paired chosen", capacity + "order: paired\n", OrderPaired, 0, 0},
	} {
		e, err := ParseExperiment([]byte(tc.file), "x.yaml")
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if e.Order != tc.order || e.Block.Std() != tc.block || e.BurnIn.Std() != tc.burnIn {
			t.Errorf("%s: order %s, block %v, burn-in %v; want %s, %v, %v", tc.name, e.Order, e.Block.Std(), e.BurnIn.Std(), tc.order, tc.block, tc.burnIn)
		}
	}
}
