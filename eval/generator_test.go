package eval

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/analysis"
	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

var waitModes = []waitMode{waitThread, waitYield}

// earlyOffsets is a schedule whose gaps range from none to a few
// milliseconds, with runs of equal offsets, so that a generator that wakes
// early, rounds, or skips a wait releases some request before its time.
func earlyOffsets() []time.Duration {
	var offs []time.Duration
	t := time.Duration(0)
	gaps := []time.Duration{0, 1, 999, 10 * time.Microsecond, 0, 77 * time.Microsecond, 250 * time.Microsecond,
		301 * time.Microsecond, time.Millisecond, 3*time.Millisecond + 7, 6 * time.Millisecond}
	for i := range 120 {
		t += gaps[i%len(gaps)]
		offs = append(offs, t)
	}
	return offs
}

// No request is ever released before its intended time, in every wait
// mode; each is released once, in schedule order.
func TestGenerateNeverEarly(t *testing.T) {
	offs := earlyOffsets()
	for _, mode := range waitModes {
		t.Run(mode.String(), func(t *testing.T) {
			start := time.Now().Add(time.Millisecond)
			var got []int
			how := generate(context.Background(), generatorOptions{wait: mode}, start, offs, func(i int, intended time.Time) {
				now := time.Now()
				if want := start.Add(offs[i]); !intended.Equal(want) {
					t.Errorf("request %d: intended %v; want %v", i, intended, want)
				}
				if now.Before(intended) {
					t.Errorf("request %d released %v before its intended time", i, intended.Sub(now))
				}
				got = append(got, i)
			})
			if len(got) != len(offs) {
				t.Fatalf("released %d requests; want %d", len(got), len(offs))
			}
			for k, i := range got {
				if i != k {
					t.Fatalf("release %d was request %d; want %d (schedule order)", k, i, k)
				}
			}
			wantMode := mode
			if !threadSleepSupported {
				wantMode = waitYield
			}
			if !strings.HasPrefix(how, wantMode.String()+", ") || !strings.Contains(how, "GOMAXPROCS ") {
				t.Errorf("generator described as %q; want it to start with %q and give GOMAXPROCS", how, wantMode.String()+", ")
			}
		})
	}
}

// A cancelled generator still releases every request exactly once.
func TestGenerateCancelledReleasesAll(t *testing.T) {
	for _, mode := range waitModes {
		t.Run(mode.String(), func(t *testing.T) {
			offs := make([]time.Duration, 50)
			for i := range offs {
				offs[i] = time.Duration(i) * 20 * time.Millisecond // a second in all
			}
			ctx, cancel := context.WithCancel(context.Background())
			seen := make([]int, len(offs))
			began := time.Now()
			generate(ctx, generatorOptions{wait: mode}, time.Now(), offs, func(i int, _ time.Time) {
				seen[i]++
				if i == 3 {
					cancel()
				}
			})
			for i, n := range seen {
				if n != 1 {
					t.Errorf("request %d released %d times; want 1", i, n)
				}
			}
			if el := time.Since(began); el > 500*time.Millisecond {
				t.Errorf("cancelled generator took %v; want it to stop waiting (schedule lasts 1 s)", el)
			}
		})
	}
}

// Through the runner, in every wait mode and with workers started on demand
// or up front, every record has a non-negative lag, a send no earlier than
// its release, and the concurrency cap is never exceeded.
func TestRunnerNeverReleasesEarly(t *testing.T) {
	for _, mode := range waitModes {
		for _, lazy := range []bool{true, false} {
			name := fmt.Sprintf("%s/lazy=%v", mode, lazy)
			var mu sync.Mutex
			inflight, peak := 0, 0
			backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				mu.Lock()
				inflight++
				peak = max(peak, inflight)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				inflight--
				mu.Unlock()
				return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
			})
			exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"})
			exp.Arrival = Arrival{Pattern: "poisson", Rate: 4000}
			exp.Concurrency = 3
			exp.Timeout = stack.Duration(time.Second)
			r := &Runner{Exp: exp, Tasks: fakeTasks(200), gen: generatorOptions{wait: mode, eagerWorkers: !lazy},
				Build: capped(exp, backend)}
			got, _ := collect(t, context.Background(), r)
			if len(got) != 200 {
				t.Errorf("%s: %d records; want 200", name, len(got))
			}
			for id, rec := range got {
				if rec.LagMs < 0 || rec.SentAt.Before(rec.IntendedAt) || rec.QueueMs < 0 {
					t.Errorf("%s: %s released early: lag %v ms, queue %v ms, intended %v, sent %v",
						name, id, rec.LagMs, rec.QueueMs, rec.IntendedAt, rec.SentAt)
				}
			}
			if peak > exp.Concurrency || peak < 2 {
				t.Errorf("%s: peak in flight %d; want 2..%d (queueing under the cap)", name, peak, exp.Concurrency)
			}
		}
	}
}

// A burst larger than the concurrency cap: the first Concurrency releases
// find a slot, every later one is marked as waiting for a slot, and the
// load summary counts exactly those. The model answers only after the
// generator has released the whole burst, so no slot frees up early.
func TestSlotWaitMarksCapWaits(t *testing.T) {
	if !threadSleepSupported {
		t.Skip("the release hook runs on the generator thread (Linux)")
	}
	tests := []struct {
		name        string
		concurrency int
		eager       bool
		wantWaits   int
	}{
		{"cap 3 of 10, workers on demand", 3, false, 7},
		{"cap 3 of 10, workers up front", 3, true, 7},
		{"cap 10 of 10", 10, false, 0},
		{"cap 64 of 10", 64, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gate := make(chan struct{})
			backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
				<-gate
				return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
			})
			exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"})
			exp.Arrival = Arrival{Pattern: "burst"}
			exp.Concurrency = tc.concurrency
			exp.Timeout = stack.Duration(10 * time.Second)
			// The gate opens once all ten requests are inside the stack
			// and have had time to reach the cap.
			var entered atomic.Int32
			build := capped(exp, backend)
			r := &Runner{Exp: exp, Tasks: fakeTasks(10),
				gen: generatorOptions{eagerWorkers: tc.eager},
				Build: func(spec stack.ArmSpec, rep int) (*ArmStack, func(), error) {
					a, release, err := build(spec, rep)
					if err != nil {
						return nil, nil, err
					}
					inner := a.Stack
					a.Stack = model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
						if entered.Add(1) == 10 {
							time.AfterFunc(50*time.Millisecond, func() { close(gate) })
						}
						return inner.Complete(ctx, req)
					})
					return a, release, nil
				}}
			got, _ := collect(t, context.Background(), r)
			waits := 0
			for _, rec := range got {
				if rec.SlotWait {
					waits++
					if rec.QueueMs <= 0 {
						t.Errorf("seq %d waited for a slot with queue_ms %v; want the wait counted", rec.Seq, rec.QueueMs)
					}
				}
			}
			// Which requests find the cap full depends on the order in
			// which they reach it; how many can wait does not.
			if (tc.wantWaits == 0 && waits != 0) || (tc.wantWaits > 0 && (waits < 1 || waits > tc.wantWaits)) {
				t.Errorf("got %d slot waits; want %s", waits, map[bool]string{true: "0", false: fmt.Sprintf("1..%d", tc.wantWaits)}[tc.wantWaits == 0])
			}
			var all []records.Record
			for _, rec := range got {
				all = append(all, rec)
			}
			s, err := summarizeRecs(all, analysis.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if ls := s.Arms[0].Load; ls == nil || ls.Queued != tc.wantWaits {
				t.Errorf("load stats %+v; want queued %d", ls, tc.wantWaits)
			}
		})
	}
}

// TestGeneratorModeChoosesWait checks that the library default leaves
// process-wide settings alone and that only an explicit choice, or a test's
// own wait, runs the dedicated thread.
func TestGeneratorModeChoosesWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    generatorOptions
		mode GeneratorMode
		want waitMode
	}{
		{"default", generatorOptions{}, GeneratorPortable, waitYield},
		{"dedicated", generatorOptions{}, GeneratorDedicated, waitThread},
		{"test-thread", generatorOptions{wait: waitThread}, GeneratorPortable, waitThread},
		{"test-yield", generatorOptions{wait: waitYield}, GeneratorDedicated, waitYield},
	}
	for _, tc := range tests {
		if got := tc.o.with(tc.mode).wait; got != tc.want {
			t.Errorf("%s: got wait %v; want %v", tc.name, got, tc.want)
		}
	}
}
