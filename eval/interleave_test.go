package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

func TestBlocks(t *testing.T) {
	t.Parallel()
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		offsets []time.Duration
		span    time.Duration
		want    [][]int           // seqs per block
		offs    [][]time.Duration // offsets per block
	}{
		{"burst is one block", ms(0, 0, 0), 100 * time.Millisecond, [][]int{{0, 1, 2}}, [][]time.Duration{ms(0, 0, 0)}},
		{"gaps kept across blocks", ms(0, 40, 90, 130, 260), 100 * time.Millisecond,
			[][]int{{0, 1, 2}, {3}, {4}}, [][]time.Duration{ms(0, 40, 90), ms(40), ms(130)}},
		{"one block when span covers all", ms(5, 10, 15), time.Second, [][]int{{0, 1, 2}}, [][]time.Duration{ms(5, 10, 15)}},
	} {
		got := Blocks(tc.offsets, tc.span)
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %d blocks; want %d", tc.name, len(got), len(tc.want))
			continue
		}
		for i, b := range got {
			if fmt.Sprint(b.Seqs) != fmt.Sprint(tc.want[i]) || fmt.Sprint(b.Offsets) != fmt.Sprint(tc.offs[i]) {
				t.Errorf("%s: block %d = %v at %v; want %v at %v", tc.name, i, b.Seqs, b.Offsets, tc.want[i], tc.offs[i])
			}
		}
	}
}

// outageRun plays three arms on one backend that fails every call made
// while it is down, and returns each arm's failed requests. down decides,
// from the backend's n-th call (0-based) and the time since the run
// started, whether the backend is down.
func outageRun(t testing.TB, order string, exp *Experiment, tasks []Task, down func(n int, since time.Duration) bool) map[string]int {
	exp.Order = order
	var calls atomic.Int64
	start := time.Now()
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		if down(int(calls.Add(1)-1), time.Since(start)) {
			return nil, errors.New("backend down")
		}
		return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
	})
	var mu sync.Mutex
	failed := map[string]int{}
	r := &Runner{Exp: exp, Tasks: tasks,
		Build: func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
			return &ArmStack{Spec: spec, Stack: backend}, nil, nil
		},
		Emit: func(rec records.Record) error {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := failed[rec.Arm]; !ok {
				failed[rec.Arm] = 0
			}
			if rec.Outcome == records.OutcomeError { // the outage's answer, not a slow machine's timeout
				failed[rec.Arm]++
			}
			return nil
		}}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return failed
}

func minMax(m map[string]int) (lo, hi int) {
	lo = -1
	for _, v := range m {
		if lo < 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return lo, hi
}

// An outage in the middle of a run falls on every arm when arms are
// interleaved, and on one arm alone when they run one after another. The
// outage is a window of the backend's calls (calls happen in time order),
// so the test does not depend on how fast the machine is.
func TestInterleavedSpreadsOutage(t *testing.T) {
	t.Parallel()
	arms := []stack.ArmSpec{{Name: "a", Model: "m", Mode: "full"}, {Name: "b", Model: "m", Mode: "full"}, {Name: "c", Model: "m", Mode: "full"}}
	const n = 300
	// calls 300..499 of 900: the whole second third of a sequential run
	down := func(i int, _ time.Duration) bool { return i >= 300 && i < 500 }
	for _, tc := range []struct {
		order  string
		spread bool
	}{{OrderPaired, true}, {OrderSwitchback, true}, {OrderSequential, false}} {
		t.Run(tc.order, func(t *testing.T) {
			t.Parallel()
			exp := testExperiment(arms...)
			// 600/s leaves a loaded -race machine room to keep the arms'
			// lanes abreast, which is what paired promises.
			exp.Arrival = Arrival{Pattern: "constant", Rate: 600}
			if tc.order == OrderSwitchback {
				exp.Block = stack.Duration(50 * time.Millisecond) // 30 requests a block
			}
			exp.Timeout = stack.Duration(10 * time.Second)
			failed := outageRun(t, tc.order, exp, fakeTasks(n), down)
			lo, hi := minMax(failed)
			total := 0
			for _, v := range failed {
				total += v
			}
			if total != 200 {
				t.Fatalf("failed requests %v, total %d; want 200 (the outage's calls)", failed, total)
			}
			if spread := lo > 0 && hi <= 4*lo; spread != tc.spread {
				t.Errorf("failures per arm %v: spread within a factor of 4 = %v; want %v", failed, spread, tc.spread)
			}
		})
	}
}

// TestOutageHarness measures the outage target on the wall clock: three
// arms at 60 requests/s, the backend down for 3 s in the middle of the run.
// It prints each arm's failures for both orders. Enable with
// CRAB_OUTAGE_HARNESS=1 (it takes about a minute); CRAB_OUTAGE_TASKS and
// CRAB_OUTAGE_AT_S change the task count (default 300) and when the outage
// starts (default: a third of the interleaved run).
func TestOutageHarness(t *testing.T) {
	if os.Getenv("CRAB_OUTAGE_HARNESS") == "" {
		t.Skip("set CRAB_OUTAGE_HARNESS=1 to measure")
	}
	n := 300
	if v, err := strconv.Atoi(os.Getenv("CRAB_OUTAGE_TASKS")); err == nil && v > 0 {
		n = v
	}
	runTime := time.Duration(3*n) * time.Second / 60
	at := runTime / 3
	if v, err := strconv.ParseFloat(os.Getenv("CRAB_OUTAGE_AT_S"), 64); err == nil {
		at = time.Duration(v * float64(time.Second))
	}
	arms := []stack.ArmSpec{{Name: "a", Model: "m", Mode: "full"}, {Name: "b", Model: "m", Mode: "full"}, {Name: "c", Model: "m", Mode: "full"}}
	for _, order := range []string{OrderSwitchback, OrderSequential} {
		exp := testExperiment(arms...)
		exp.Arrival = Arrival{Pattern: "constant", Rate: 60}
		exp.Timeout = stack.Duration(time.Second)
		if order == OrderSwitchback {
			exp.Block = stack.Duration(DefaultBlock)
		}
		failed := outageRun(t, order, exp, fakeTasks(n), func(_ int, since time.Duration) bool {
			return since >= at && since < at+3*time.Second
		})
		lo, hi := minMax(failed)
		t.Logf("%-11s outage 3s at %v: failures per arm %v (max/min %.2f)", order, at, failed, float64(hi)/float64(max(lo, 1)))
	}
}

// In paired order a short stall of the backend falls on every arm's copy of
// the same task, so it cancels in the paired delta; in the other orders it
// lands on whichever arm was sending. What decides it is how far apart in
// the backend's calls the copies of one task are: measured in calls (they
// happen in release order), the test does not depend on how fast the
// machine is, and the median keeps a few copies that a worker picked up
// out of order from deciding it. The rate leaves 2 ms between releases:
// at thousands a second a loaded machine under -race falls behind its
// schedule, releases pile up and the scheduler runs them in any order,
// which measures the machine, not the order.
func TestPairedStallHitsEveryCopy(t *testing.T) {
	t.Parallel()
	const rate = 500
	arms := []stack.ArmSpec{{Name: "a", Model: "m", Mode: "full"}, {Name: "b", Model: "m", Mode: "full"}, {Name: "c", Model: "m", Mode: "full"}}
	for _, tc := range []struct {
		order      string
		lo, hi     int // bounds on the median distance in calls between a task's copies
		blockTasks int
	}{{OrderPaired, 0, 8, 0}, {OrderSwitchback, 30, 1000, 30}, {OrderSequential, 299, 1000, 0}} {
		t.Run(tc.order, func(t *testing.T) {
			t.Parallel()
			exp := testExperiment(arms...)
			exp.Arrival = Arrival{Pattern: "constant", Rate: rate}
			exp.Timeout = stack.Duration(time.Second)
			exp.Order = tc.order
			if tc.blockTasks > 0 {
				exp.Block = stack.Duration(time.Duration(tc.blockTasks) * time.Second / rate)
			}
			var calls atomic.Int64
			var mu sync.Mutex
			at := map[string][]int64{} // task -> call numbers of its copies
			backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				n := calls.Add(1) - 1
				mu.Lock()
				at[req.TaskID] = append(at[req.TaskID], n)
				mu.Unlock()
				return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
			})
			r := &Runner{Exp: exp, Tasks: fakeTasks(300),
				Build: func(spec stack.ArmSpec, _ int) (*ArmStack, func(), error) {
					return &ArmStack{Spec: spec, Stack: backend}, nil, nil
				},
				Emit: func(records.Record) error { return nil }}
			if _, err := r.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			spread := make([]int, 0, len(at))
			for _, ns := range at {
				spread = append(spread, int(slices.Max(ns)-slices.Min(ns)))
			}
			slices.Sort(spread)
			if m := spread[len(spread)/2]; m < tc.lo || m > tc.hi {
				t.Errorf("median distance between a task's copies: %d calls; want %d to %d", m, tc.lo, tc.hi)
			}
		})
	}
}
