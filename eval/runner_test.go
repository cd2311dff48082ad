package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crab-testbed/crab/contract"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

func fakeTasks(n int) []Task {
	ts := make([]Task, n)
	for i := range ts {
		ts[i] = Task{ID: fmt.Sprintf("t%02d", i), Text: fmt.Sprintf("ticket %d", i), TaskLabels: &TaskLabels{Tenant: "acme", Permission: "agent",
			Lang: "en", DocVersion: "v1", Group: "short"}, Expected: map[string]any{"category": "billing"}}
	}
	return ts
}

func answer(cat string) string {
	return `{"category":"` + cat + `","reason":"r","evidence":["e"],"risk_flags":[],"suggested_action":"s","needs_human_review":false,"background":null}`
}

// collect runs r and returns its records by task id.
func collect(t *testing.T, ctx context.Context, r *Runner) (map[string]records.Record, *Result) {
	t.Helper()
	var mu sync.Mutex
	got := map[string]records.Record{}
	r.Emit = func(rec records.Record) error {
		mu.Lock()
		defer mu.Unlock()
		if _, dup := got[rec.Arm+"/"+rec.TaskID]; dup {
			t.Errorf("record for %s/%s emitted twice", rec.Arm, rec.TaskID)
		}
		got[rec.Arm+"/"+rec.TaskID] = rec
		return nil
	}
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got, res
}

func testExperiment(arms ...stack.ArmSpec) *Experiment {
	one := 1.0
	sh := true
	return &Experiment{Repeats: 1, Concurrency: 4, Timeout: stack.Duration(50 * time.Millisecond), TimeScale: &one, Shadow: &sh,
		Arrival: Arrival{Pattern: "burst"}, Arms: arms}
}

func TestRunnerOutcomes(t *testing.T) {
	t.Parallel()
	tasks := fakeTasks(6)
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		resp := &model.Response{Content: answer("billing"), Scope: req.Scope, Usage: model.Usage{Cost: 1}, FinishReason: model.FinishStop,
			Trace: model.Trace{Attempts: 1, Validated: true, ContractOK: true}}
		switch req.TaskID {
		case "t01": // wrong category
			resp.Content = answer("refund")
		case "t02": // backend error after spending
			return &model.Response{Usage: model.Usage{Cost: 2}, Trace: model.Trace{Attempts: 2}}, model.ErrBackend
		case "t03": // hangs past the deadline
			<-ctx.Done()
			return nil, ctx.Err()
		case "t04": // answer built for another tenant
			resp.Scope.Tenant = "globex"
		}
		return resp, nil
	})
	r := &Runner{Exp: testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"}), Tasks: tasks, RunID: "r",
		Build: func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
			return &ArmStack{Spec: spec, Stack: backend}, nil, nil
		}}
	got, res := collect(t, context.Background(), r)
	if len(got) != 6 || res.Interrupted {
		t.Fatalf("got %d records, interrupted=%v; want 6, false", len(got), res.Interrupted)
	}
	want := map[string]struct {
		outcome string
		pass    bool
		cost    float64
	}{
		"t00": {records.OutcomeOK, true, 1}, "t01": {records.OutcomeOK, false, 1}, "t02": {records.OutcomeError, false, 2},
		"t03": {records.OutcomeTimeout, false, 0}, "t04": {records.OutcomeOK, false, 1}, "t05": {records.OutcomeOK, true, 1},
	}
	for id, w := range want {
		rec := got["a/"+id]
		if rec.Outcome != w.outcome || rec.Pass != w.pass || rec.Cost != w.cost {
			t.Errorf("%s: got outcome=%s pass=%v cost=%v; want %s %v %v", id, rec.Outcome, rec.Pass, rec.Cost, w.outcome, w.pass, w.cost)
		}
		if rec.E2EMs < rec.QueueMs || rec.IntendedAt.IsZero() || rec.DoneAt.Before(rec.IntendedAt) {
			t.Errorf("%s: inconsistent times: %+v", id, rec)
		}
	}
	if got["a/t03"].E2EMs < 50 {
		t.Errorf("timed-out request: e2e %.1f ms; want at least the 50 ms timeout", got["a/t03"].E2EMs)
	}
	if got["a/t02"].Attempts != 2 {
		t.Errorf("retried request: attempts %d; want 2", got["a/t02"].Attempts)
	}
}

// The latency of a request spans the stack's call and nothing of crab's
// own after it: done_at is stamped as the call returns, before the answer
// is graded and its record written, so a slow grader or records writer
// delays the records, never the latency they report. Each record's send
// and done stamps must enclose the backend's call, and its record must
// reach Emit only after done_at.
func TestRunnerTimesOnlyTheStack(t *testing.T) {
	t.Parallel()
	tasks := fakeTasks(8)
	var mu sync.Mutex
	entered, left := map[string]time.Time{}, map[string]time.Time{}
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		mu.Lock()
		entered[req.TaskID] = time.Now()
		mu.Unlock()
		resp := &model.Response{Content: answer("billing"), Scope: req.Scope, FinishReason: model.FinishStop,
			Trace: model.Trace{Attempts: 1, Validated: true, ContractOK: true}}
		mu.Lock()
		left[req.TaskID] = time.Now()
		mu.Unlock()
		return resp, nil
	})
	exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"})
	exp.Timeout = stack.Duration(time.Minute)
	r := &Runner{Exp: exp, Tasks: tasks, RunID: "r",
		Build: func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
			return &ArmStack{Spec: spec, Stack: backend}, nil, nil
		}}
	emitted := map[string]time.Time{}
	var got []records.Record
	r.Emit = func(rec records.Record) error {
		emitted[rec.TaskID] = time.Now()
		got = append(got, rec)
		return nil
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tasks) {
		t.Fatalf("got %d records; want %d", len(got), len(tasks))
	}
	for _, rec := range got {
		id := rec.TaskID
		if rec.SentAt.After(entered[id]) || rec.DoneAt.Before(left[id]) {
			t.Errorf("%s: sent %v, done %v do not enclose the stack's call (%v to %v)", id, rec.SentAt, rec.DoneAt, entered[id], left[id])
		}
		if rec.DoneAt.After(emitted[id]) {
			t.Errorf("%s: done_at %v is after the record reached the writer (%v): crab's own work is inside the latency", id, rec.DoneAt, emitted[id])
		}
		if want := records.Ms(rec.DoneAt.Sub(rec.IntendedAt)); rec.E2EMs != want {
			t.Errorf("%s: e2e %v ms; want done_at - intended_at = %v ms", id, rec.E2EMs, want)
		}
	}
}

// A slow system must not slow its own load down: with a concurrency cap of
// one, the second request waits, and that wait is queue time inside its
// latency, measured from the intended send time.
func TestRunnerOpenLoopQueueing(t *testing.T) {
	t.Parallel()
	tasks := fakeTasks(3)
	exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"})
	exp.Concurrency = 1
	exp.Timeout = stack.Duration(time.Second)
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		time.Sleep(20 * time.Millisecond)
		return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
	})
	r := &Runner{Exp: exp, Tasks: tasks, Build: capped(exp, backend)}
	got, _ := collect(t, context.Background(), r)
	var maxQueue float64
	for _, rec := range got {
		if !rec.IntendedAt.Equal(got["a/t00"].IntendedAt) {
			t.Errorf("burst: intended times differ: %v vs %v", rec.IntendedAt, got["a/t00"].IntendedAt)
		}
		maxQueue = max(maxQueue, rec.QueueMs)
		if rec.E2EMs+1e-9 < rec.QueueMs+rec.ModelMs {
			t.Errorf("%s: e2e %.2f below queue %.2f", rec.TaskID, rec.E2EMs, rec.QueueMs)
		}
	}
	if maxQueue < 35 {
		t.Errorf("max queue %.1f ms; want >= 35 (two requests ahead of 20 ms each)", maxQueue)
	}
}

// On cancellation every scheduled request of a started pass still appears
// exactly once: in sequential order the second arm never starts, in
// interleaved order every arm has started with the first block.
func TestRunnerInterrupt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		order string
		want  int
	}{{OrderSequential, 20}, {OrderSwitchback, 40}} {
		t.Run(tc.order, func(t *testing.T) {
			t.Parallel()
			tasks := fakeTasks(20)
			exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"}, stack.ArmSpec{Name: "b", Model: "m", Mode: "full"})
			exp.Arrival = Arrival{Pattern: "constant", Rate: 200}
			exp.Timeout = stack.Duration(time.Second)
			exp.Order = tc.order
			ctx, cancel := context.WithCancel(context.Background())
			var calls atomic.Int32
			backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				if calls.Add(1) == 5 {
					cancel()
				}
				select {
				case <-ctx.Done():
					return nil, ctx.Err()
				case <-time.After(time.Millisecond):
				}
				return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
			})
			r := &Runner{Exp: exp, Tasks: tasks,
				Build: func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
					return &ArmStack{Spec: spec, Stack: backend}, nil, nil
				}}
			got, res := collect(t, ctx, r)
			if !res.Interrupted {
				t.Error("interrupted = false; want true")
			}
			if len(got) != tc.want {
				t.Errorf("got %d records; want %d", len(got), tc.want)
			}
			cancelled := 0
			for _, rec := range got {
				if rec.Outcome == records.OutcomeCancelled {
					cancelled++
				}
			}
			if cancelled < tc.want/2 {
				t.Errorf("cancelled records = %d; want most of the %d", cancelled, tc.want)
			}
		})
	}
}

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	live := context.Background()
	dead, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name     string
		ctx      context.Context
		err      error
		timedOut bool
		want     string
	}{
		{"ok", live, nil, false, records.OutcomeOK},
		{"backend", live, model.ErrBackend, false, records.OutcomeError},
		{"deadline", live, context.DeadlineExceeded, true, records.OutcomeTimeout},
		{"contract", live, fmt.Errorf("x: %w", contract.ErrViolation), false, records.OutcomeContractFail},
		{"cancelled", dead, context.Canceled, false, records.OutcomeCancelled},
		{"wrapped deadline", live, fmt.Errorf("call: %w", context.DeadlineExceeded), false, records.OutcomeTimeout},
		{"other", live, errors.New("boom"), false, records.OutcomeError},
	}
	for _, tc := range cases {
		if got := outcomeOf(tc.ctx, tc.err, tc.timedOut); got != tc.want {
			t.Errorf("%s: got %s; want %s", tc.name, got, tc.want)
		}
	}
}

// capped builds an arm over backend (model "m") through the stack, with the
// experiment's concurrency cap on model calls, as crab run does.
func capped(exp *Experiment, backend model.Model) func(stack.ArmSpec, int) (*ArmStack, func(), error) {
	return func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
		a, err := stack.Build(spec, map[string]model.Model{"m": backend}, stack.Options{Concurrency: exp.Concurrency, WaitForStore: true})
		if err != nil {
			return nil, nil, err
		}
		return &ArmStack{Spec: spec, Stack: a.Model, Judge: a.Judge}, func() { a.Close() }, nil
	}
}

// A cache hit is answered at once while every model slot is held by
// misses: the concurrency cap holds model calls, not requests.
func TestCacheHitTakesNoModelSlot(t *testing.T) {
	t.Parallel()
	tasks := fakeTasks(5)
	tasks[4].Text = tasks[0].Text // t04 repeats t00: a hit once t00 is answered
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		d := 300 * time.Millisecond
		if req.Text == tasks[0].Text {
			d = 5 * time.Millisecond
		}
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
	})
	spec := stack.ArmSpec{Name: "a", Model: "m", Mode: "full", Cache: &stack.CacheSpec{Key: "full", Store: "ristretto"}}
	exp := testExperiment(spec)
	exp.Concurrency = 2
	exp.Timeout = stack.Duration(5 * time.Second)
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	// t00 at 0 (fast), three slow misses at 50 ms (two hold the slots, one
	// waits), then t04, the repeat of t00, at 100 ms.
	exp.Arrival = Arrival{Pattern: PatternReplay, Offsets: []time.Duration{0, ms(50), ms(50), ms(50), ms(100)}}
	r := &Runner{Exp: exp, Tasks: tasks, Build: capped(exp, backend)}
	got, _ := collect(t, context.Background(), r)
	hit := got["a/t04"]
	if hit.Cache != model.CacheHit {
		t.Fatalf("t04 cache %q; want a hit", hit.Cache)
	}
	if hit.E2EMs > 150 || hit.SlotWait {
		t.Errorf("hit took %.1f ms (slot wait %v) while misses held every slot; want it answered at once", hit.E2EMs, hit.SlotWait)
	}
	waited := 0
	for _, id := range []string{"a/t01", "a/t02", "a/t03"} {
		if got[id].SlotWait {
			waited++
		}
	}
	if waited != 1 {
		t.Errorf("%d of the three slow misses waited for a slot; want 1 (cap 2)", waited)
	}
}

// A panic of crab's own code on one request's way (here the arm's stack)
// ends that request as outcome error, counted in Result.Bugs with its
// stack, and never the run: every other request is answered and
// recorded.
func TestRunnerRecoversABug(t *testing.T) {
	t.Parallel()
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if req.TaskID == "t02" {
			var none []int
			_ = none[len(req.TaskID)] // an index out of range: a bug, not a model's fault
		}
		return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
	})
	exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"}, stack.ArmSpec{Name: "b", Model: "m", Mode: "full"})
	r := &Runner{Exp: exp, Tasks: fakeTasks(5), Build: capped(exp, backend)}
	got, res := collect(t, context.Background(), r)
	if len(got) != 10 {
		t.Fatalf("%d records; want 10 (every request recorded)", len(got))
	}
	for key, rec := range got {
		bug := strings.HasSuffix(key, "/t02")
		if isBug := rec.Outcome == records.OutcomeError && strings.Contains(rec.Error, "crab internal error"); isBug != bug || bug && (rec.Pass || rec.DoneAt.IsZero()) {
			t.Errorf("%s: outcome %s, error %q, pass %v; want a crab internal error exactly on t02", key, rec.Outcome, rec.Error, rec.Pass)
		}
	}
	if res.Bugs != 2 || !strings.Contains(res.FirstBug, "index out of range") || !strings.Contains(res.FirstBug, "runner_test.go") {
		t.Errorf("Bugs %d, FirstBug %q; want 2, with the panic and its stack", res.Bugs, res.FirstBug)
	}
}
