package sim_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
)

// varyModel is a model that never misreads on its own (and, with bias
// +100, always does), so that every wrong answer (or right one) comes
// from varying.
func varyModel(t *testing.T, v sim.Vary, bias float64) (*sim.Model, func(task, caller string, seed int64, attempt int) bool) {
	t.Helper()
	c := []byte(`{"type": "object", "properties": {"intent": {"type": "string", "enum": ["refund", "track", "cancel"]},
		"escalate": {"type": "boolean"}, "priority": {"type": "integer", "minimum": 1, "maximum": 5}},
		"required": ["intent", "escalate", "priority"], "additionalProperties": false}`)
	exp := map[string]any{"intent": "track", "escalate": true, "priority": 3.0}
	cfg := sim.Large()
	cfg.Errors = sim.ErrorModel{Bias: bias, MisreadFields: 1}
	cfg.Oracle = func(string) map[string]any { return exp }
	cfg.Vary = v
	cfg.Seed = 7
	m := newModel(t, cfg)
	right := func(task, caller string, seed int64, attempt int) bool {
		p, err := m.Plan(&model.Request{TaskID: task, Text: "Where is parcel " + task + "?", Contract: c,
			Caller: caller, Seed: seed, Attempt: attempt, Scope: model.Scope{Tenant: "acme", Lang: "en"}})
		if err != nil {
			t.Fatal(err)
		}
		return field(t, p.Content, "intent") == "track" && field(t, p.Content, "escalate") == true && field(t, p.Content, "priority") == 3.0
	}
	return m, right
}

// within reports whether k of n is within z standard errors of rate p.
func within(k, n int, p, z float64) bool {
	sd := math.Sqrt(float64(n) * p * (1 - p))
	return math.Abs(float64(k)-float64(n)*p) <= z*sd
}

// A declared share of tasks varies, each call of such a task is wrong
// with the declared probability, and every other task keeps its answer.
func TestVaryShareAndFlip(t *testing.T) {
	t.Parallel()
	const share, flip, tasks, calls = 0.1, 0.3, 1500, 10
	_, right := varyModel(t, sim.Vary{Share: share, Flip: flip}, -100)
	varying, wrongCalls := 0, 0
	for i := range tasks {
		task := fmt.Sprintf("t%04d", i)
		wrong := 0
		for k := range calls {
			// calls differ by arm, repeat and attempt
			if !right(task, []string{"baseline", "twin", "short"}[k%3], int64(k/3%2), k/6) {
				wrong++
			}
		}
		if wrong > 0 {
			varying++
			wrongCalls += wrong
		}
	}
	// A varying task shows no wrong call with probability (1-flip)^calls.
	seen := share * (1 - math.Pow(1-flip, calls))
	if !within(varying, tasks, seen, 4) {
		t.Errorf("%d of %d tasks answered wrong at least once; want about %.0f (share %v)", varying, tasks, seen*tasks, share)
	}
	// Among the tasks seen varying, calls are wrong at flip (conditioned
	// on at least one wrong call).
	n := varying * calls
	cond := flip / (1 - math.Pow(1-flip, calls))
	if !within(wrongCalls, n, cond, 4) {
		t.Errorf("%d of %d calls of varying tasks wrong; want about %.0f (flip %v)", wrongCalls, n, cond*float64(n), flip)
	}
}

// A varying task is right on the calls its draw does not flip, even where
// the error model alone would always misread it.
func TestVaryFlipsBothWays(t *testing.T) {
	t.Parallel()
	const tasks, calls = 400, 10
	_, right := varyModel(t, sim.Vary{Share: 1, Flip: 0.5}, 100)
	r := 0
	for i := range tasks {
		for k := range calls {
			if right(fmt.Sprintf("t%d", i), fmt.Sprint("arm", k), 1, 0) {
				r++
			}
		}
	}
	if !within(r, tasks*calls, 0.5, 4) {
		t.Errorf("%d of %d calls right; want about half", r, tasks*calls)
	}
}

// Share 0 is deterministic: every call of a task gives the same answer.
func TestVaryOff(t *testing.T) {
	t.Parallel()
	_, right := varyModel(t, sim.Vary{}, -100)
	for i := range 300 {
		for k := range 4 {
			if !right(fmt.Sprint("t", i), fmt.Sprint("arm", k), int64(k), k) {
				t.Fatalf("task %d call %d wrong with varying off and a model that never misreads", i, k)
			}
		}
	}
}

// The draws depend on the calls alone: the same calls made in another
// order, from many goroutines, give the same answers.
func TestVaryReproducible(t *testing.T) {
	t.Parallel()
	type call struct {
		task, caller string
		seed         int64
	}
	var all []call
	for i := range 200 {
		for _, arm := range []string{"a", "b", "c"} {
			for s := range 2 {
				all = append(all, call{fmt.Sprint("t", i), arm, int64(s)})
			}
		}
	}
	run := func(order []int) map[call]bool {
		_, right := varyModel(t, sim.Vary{Share: 0.5, Flip: 0.5}, -100)
		out := make(map[call]bool, len(all))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := w; j < len(order); j += 4 {
					c := all[order[j]]
					r := right(c.task, c.caller, c.seed, 0)
					mu.Lock()
					out[c] = r
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return out
	}
	g := rand.New(rand.NewPCG(1, 2))
	a, b := run(g.Perm(len(all))), run(g.Perm(len(all)))
	differ, wrong := 0, 0
	for c, r := range a {
		if b[c] != r {
			differ++
		}
		if !r {
			wrong++
		}
	}
	if differ > 0 {
		t.Errorf("%d of %d calls answered differently when made in another order", differ, len(all))
	}
	if wrong == 0 {
		t.Error("no call answered wrong: the test draws nothing")
	}
}

// Bad settings are refused naming the field.
func TestVaryConfig(t *testing.T) {
	t.Parallel()
	for _, v := range []sim.Vary{{Share: -0.1}, {Share: 1.5}, {Share: 0.1, Flip: 2}, {Share: math.NaN()}} {
		cfg := sim.Small()
		cfg.Vary = v
		if _, err := sim.New(cfg); err == nil {
			t.Errorf("vary %+v accepted", v)
		}
	}
	cfg := sim.Small()
	cfg.Vary = sim.Vary{Share: 0.2}
	m, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Config().Vary; got.Flip != sim.DefaultFlip {
		t.Errorf("flip unset became %v; want DefaultFlip %v", got.Flip, sim.DefaultFlip)
	}
}
