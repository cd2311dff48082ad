package stack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
)

// Every arm built over one backend set calls the same simulated model, so
// they share its capacity: a call of one arm waits for the slot a call of
// another arm holds, and the call log tells the arms apart. The plans last
// minutes (time-scale 1000), so the first call holds its slot while the
// test looks, and no timing is asserted.
func TestSimCapacitySharedByArms(t *testing.T) {
	t.Parallel()
	models := []ModelSpec{{Name: "large", Kind: "large", Capacity: &sim.Capacity{Slots: 1}}}
	a := validated(t, models, ArmSpec{Name: "baseline", Model: "large"})
	b := validated(t, models, ArmSpec{Name: "short", Model: "large", Mode: model.ModeShort})
	log := &sim.CallLog{}
	backends, err := Backends(models, BackendOptions{TimeScale: 1000, CallLog: log})
	if err != nil {
		t.Fatal(err)
	}
	var arms []*Arm
	for _, spec := range []ArmSpec{a, b} {
		arm, err := Build(spec, backends, Options{Contract: loadContract(t), WaitForStore: true})
		if err != nil {
			t.Fatal(err)
		}
		defer arm.Close()
		arms = append(arms, arm)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	call := func(arm *Arm, id string) {
		_, err := arm.Model.Complete(ctx, request(id))
		done <- err
	}
	waitCalls := func(n int) []sim.Call {
		for {
			if c := log.Calls(); len(c) >= n {
				return c
			}
			time.Sleep(time.Millisecond)
		}
	}
	go call(arms[0], "t1")
	waitCalls(1)
	go call(arms[1], "t1")
	calls := waitCalls(2)
	cancel()
	for range 2 {
		<-done
	}
	first, second := calls[0], calls[1]
	if first.Caller != "baseline" || second.Caller != "short" {
		t.Fatalf("callers %q, %q; want the arms baseline and short", first.Caller, second.Caller)
	}
	if first.Wait != 0 || second.Wait <= 0 || second.Wait != first.Total-second.At.Sub(first.At) {
		t.Errorf("waits %v and %v (first total %v, arrivals %v apart); want the second arm to wait for the first's slot",
			first.Wait, second.Wait, first.Total, second.At.Sub(first.At))
	}
}

// A cache hit serves the stored answer, drawn once, even when the model's
// answers vary from call to call; the same arm's calls without a cache do
// vary.
func TestSimVaryingAnswerCached(t *testing.T) {
	t.Parallel()
	c := loadContract(t)
	exp := map[string]any{"category": "billing"}
	models := []ModelSpec{{Name: "large", Kind: "large", Vary: &sim.Vary{Share: 1, Flip: 0.5}}}
	backends, err := Backends(models, BackendOptions{Oracle: func(string) map[string]any { return exp }})
	if err != nil {
		t.Fatal(err)
	}
	answers := func(spec ArmSpec) map[string]int {
		spec = validated(t, models, spec)
		arm, err := Build(spec, backends, Options{Contract: c, WaitForStore: true})
		if err != nil {
			t.Fatal(err)
		}
		defer arm.Close()
		seen := map[string]int{}
		for i := range 40 {
			req := request("t1")
			req.Seed = int64(i) // another repeat: another call
			resp, err := arm.Model.Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if i > 0 && spec.Cache != nil && resp.Trace.Cache != model.CacheHit {
				t.Fatalf("call %d: cache %q; want a hit", i, resp.Trace.Cache)
			}
			seen[resp.Content]++
		}
		return seen
	}
	if got := answers(ArmSpec{Name: "cached", Model: "large", Cache: &CacheSpec{}}); len(got) != 1 {
		t.Errorf("cache arm served %d different answers; want the stored one only", len(got))
	}
	if got := answers(ArmSpec{Name: "plain", Model: "large"}); len(got) < 2 {
		t.Errorf("arm without a cache got %d different answers over 40 calls; want them to vary", len(got))
	}
}

// Unset, a simulated model varies by the default; vary: {share: 0} makes it
// deterministic.
func TestSimVaryDefault(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		vary *sim.Vary
		want sim.Vary
	}{{nil, sim.DefaultVary()}, {&sim.Vary{}, sim.Vary{}}, {&sim.Vary{Share: 0.2, Flip: 0.1}, sim.Vary{Share: 0.2, Flip: 0.1}}} {
		b, err := Backends([]ModelSpec{{Name: "small", Kind: "small", Vary: tc.vary}}, BackendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := b["small"].(*sim.Model).Config().Vary; got != tc.want {
			t.Errorf("vary %s: model varies %+v; want %+v", fmt.Sprint(tc.vary), got, tc.want)
		}
	}
}
