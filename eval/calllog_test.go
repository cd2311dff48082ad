package eval

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/fixtures"
	"github.com/crab-testbed/crab/internal/tunefixture"
	"github.com/crab-testbed/crab/model/sim"
)

// The simulated model's own call log shows the load each arm offered it:
// in paired order both arms call one model at the declared rate at the
// same time, so the model sees twice the rate; in sequential order each
// arm has it to itself. Every arm calls the one model of the run (one
// capacity pool), and the log tells the arms apart.
func TestCallLogOfferedLoadByOrder(t *testing.T) {
	t.Parallel()
	const tasks, rate = 30, 200.0
	dir := t.TempDir()
	tasksPath := filepath.Join(dir, "tasks.jsonl")
	tunefixture.WriteTasks(t, tasksPath, tasks)
	for _, order := range []string{OrderPaired, OrderSequential} {
		path := writeLoadExperiment(t, dir, tasksPath, order, rate, "")
		s, err := LoadSetup(path, fixtures.FS)
		if err != nil {
			t.Fatal(err)
		}
		log := &sim.CallLog{}
		if err := s.LogCalls(log); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Runner("load", func(records.Record) error { return nil }).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		loads := sim.OfferedLoad(log.Calls())
		if len(loads) != 2 || loads[0].Caller != "baseline" || loads[1].Caller != "short" || loads[0].Model != "large" {
			t.Fatalf("%s: loads %+v; want baseline and short on large", order, loads)
		}
		var arm float64
		for _, l := range loads {
			// Open loop at the declared rate; a loaded machine sends late
			// and catches up, so only the order of magnitude is checked.
			if l.Calls != tasks || l.CallsPerSec < rate/2 || l.CallsPerSec > 2*rate {
				t.Errorf("%s: %s offered %d calls at %.0f/s; want %d at about %g/s", order, l.Caller, l.Calls, l.CallsPerSec, tasks, rate)
			}
			arm += l.CallsPerSec / float64(len(loads))
		}
		// Together the arms offer the model the sum of their rates only
		// when their spans overlap: in paired order both follow one
		// schedule, so the model sees twice an arm's rate.
		calls := log.Calls()
		first, last := calls[0].At, calls[0].At
		for _, c := range calls {
			first, last = minTime(first, c.At), maxTime(last, c.At)
		}
		ratio := float64(len(calls)-1) / last.Sub(first).Seconds() / arm
		switch order {
		case OrderPaired:
			if math.Abs(ratio-2) > 0.4 {
				t.Errorf("paired: the model saw %.2f times an arm's rate; want 2", ratio)
			}
		case OrderSequential:
			if ratio > 1.1 {
				t.Errorf("sequential: the model saw %.2f times an arm's rate; want at most 1", ratio)
			}
		}
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// writeLoadExperiment writes an experiment of two arms (baseline and
// short) calling one simulated model of 4 slots at rate, in order (extra
// is appended: block, burn_in), and returns its path.
func writeLoadExperiment(t *testing.T, dir, tasksPath, order string, rate float64, extra string) string {
	t.Helper()
	exp := fmt.Sprintf(`name: load
tasks: %s
contract: embedded:triage.schema.json
seed: 3
time_scale: 0.001
order: %s
arrival: {pattern: constant, rate: %g}
concurrency: 32
timeout: 10s
models:
  - {name: large, kind: large, capacity: {slots: 4, slowdown: 0.05}}
arms:
  - {name: baseline, model: large}
  - {name: short, model: large, mode: short, max_tokens: 160}
`, tasksPath, order, rate) + extra
	path := filepath.Join(dir, order+".yaml")
	if err := os.WriteFile(path, []byte(exp), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
