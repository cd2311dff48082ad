package eval

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crab-testbed/crab/eval/records"
	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/stack"
)

// TestRunnerStartAt: two shards whose runners start apart, given one
// StartAt, send on one clock: every request of the burst is intended at
// the common start and none is sent before it.
func TestRunnerStartAt(t *testing.T) {
	t.Parallel()
	backend := model.ModelFunc(func(ctx context.Context, req *model.Request) (*model.Response, error) {
		return &model.Response{Content: answer("billing"), Scope: req.Scope, Trace: model.Trace{Validated: true, ContractOK: true}}, nil
	})
	exp := testExperiment(stack.ArmSpec{Name: "a", Model: "m", Mode: "full"})
	exp.Timeout = stack.Duration(5 * time.Second)
	start := time.Now().Add(time.Second)
	got := make([]map[string]records.Record, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 300 * time.Millisecond) // the second process starts later
			r := &Runner{Exp: exp, Tasks: fakeTasks(10), Build: capped(exp, backend), Shard: Shard{Index: i, Count: 2}, StartAt: start}
			got[i], _ = collect(t, context.Background(), r)
		}()
	}
	wg.Wait()
	for i, recs := range got {
		if len(recs) != 5 {
			t.Fatalf("shard %d/2: %d records; want 5", i, len(recs))
		}
		for _, rec := range recs {
			if !rec.IntendedAt.Equal(start) {
				t.Errorf("shard %d/2, %s: intended at %s; want the common start %s", i, rec.TaskID, rec.IntendedAt, start)
			}
			if rec.SentAt.Before(start) {
				t.Errorf("shard %d/2, %s: sent at %s, before the common start %s", i, rec.TaskID, rec.SentAt, start)
			}
		}
	}
}
