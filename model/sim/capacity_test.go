package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crab-testbed/crab/model"
	"github.com/crab-testbed/crab/model/sim"
)

const ms = time.Millisecond

// Calls beyond the slots queue first come, first served; each further
// running sequence slows the decode by Slowdown.
func TestSchedulerSlotsQueueAndSlowdown(t *testing.T) {
	t.Parallel()
	s := sim.NewScheduler(sim.Capacity{Slots: 2, Slowdown: 0.5})
	type want struct {
		wait    time.Duration
		running int
		end     time.Duration
	}
	for i, tc := range []struct {
		at   time.Duration
		want want
	}{
		{0, want{0, 1, 100 * ms}},                 // alone: 10 + 90
		{0, want{0, 2, 145 * ms}},                 // beside one: 10 + 90·1.5
		{0, want{100 * ms, 2, 245 * ms}},          // queues for the first slot to free (100), runs beside the second
		{50 * ms, want{95 * ms, 2, 290 * ms}},     // next slot frees at 145
		{300 * ms, want{0, 1, 400 * ms}},          // everything done: alone again
		{20 * ms, want{0, 2, 445 * ms}},           // an arrival from the past counts as arriving with the last
		{1000 * ms, want{0, 1, 1100 * ms}},        // idle again
		{1000 * ms, want{0, 2, 1145 * ms}},        // both slots
		{1000 * ms, want{100 * ms, 2, 1245 * ms}}, // queued
	} {
		got, ok := s.Admit(tc.at, 10*ms, 90*ms)
		if !ok {
			t.Fatalf("call %d refused with no queue limit", i)
		}
		if got.Wait != tc.want.wait || got.Running != tc.want.running || got.End != tc.want.end {
			t.Errorf("call %d at %v: wait %v, running %d, end %v; want %v, %d, %v", i, tc.at, got.Wait, got.Running, got.End, tc.want.wait, tc.want.running, tc.want.end)
		}
	}
}

// Latency grows with load as the parameters give it: with one slot and
// calls arriving every gap faster than the service time, the k-th call
// waits k·(service − gap); with calls slower than the service, none waits.
func TestSchedulerLatencyGrowsWithLoad(t *testing.T) {
	t.Parallel()
	const service = 100 * ms
	for _, gap := range []time.Duration{150 * ms, 100 * ms, 80 * ms, 50 * ms} {
		s := sim.NewScheduler(sim.Capacity{Slots: 1})
		for k := range 20 {
			got, _ := s.Admit(time.Duration(k)*gap, 0, service)
			want := time.Duration(k) * max(service-gap, 0)
			if got.Wait != want {
				t.Errorf("gap %v, call %d: wait %v; want %v", gap, k, got.Wait, want)
			}
		}
	}
	// Slowdown alone (slots enough for all): n calls at once each take
	// decode·(1 + slowdown·(running−1)), running counting those started.
	s := sim.NewScheduler(sim.Capacity{Slots: 100, Slowdown: 0.1})
	for k := range 10 {
		got, _ := s.Admit(0, 0, service)
		want := time.Duration(float64(service) * (1 + 0.1*float64(k)))
		if got.Wait != 0 || got.End != want || got.Running != k+1 {
			t.Errorf("call %d of a burst: wait %v, end %v, running %d; want 0, %v, %d", k, got.Wait, got.End, got.Running, want, k+1)
		}
	}
}

// A full queue refuses the call at once and the refused call takes
// nothing.
func TestSchedulerMaxQueue(t *testing.T) {
	t.Parallel()
	s := sim.NewScheduler(sim.Capacity{Slots: 1, MaxQueue: 2})
	var oks []bool
	for range 5 {
		_, ok := s.Admit(0, 0, 100*ms)
		oks = append(oks, ok)
	}
	if want := []bool{true, true, true, false, false}; !equalBools(oks, want) {
		t.Errorf("admitted %v; want %v (one running, two queued)", oks, want)
	}
	// At 150 the second call runs and only the third waits: one more fits.
	got, ok := s.Admit(150*ms, 0, 100*ms)
	if !ok || got.Queued != 1 || got.Wait != 150*ms {
		t.Errorf("at 150ms: ok %v, queued %d, wait %v; want true, 1, 150ms", ok, got.Queued, got.Wait)
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// In process, a model with capacity puts the queue wait into its latency
// and TTFT; a full queue is a backend error at once; calls at time-scale 0
// or nominal are left alone. The plans last minutes, so that none ends
// while the test looks.
func TestModelAdmit(t *testing.T) {
	t.Parallel()
	cfg := sim.Large()
	cfg.Capacity = sim.Capacity{Slots: 1, MaxQueue: 1}
	cfg.TimeScale = 1000 // plans far longer than the test
	log := &sim.CallLog{}
	cfg.CallLog = log
	m, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{TaskID: "t1", Text: "Where is my parcel?", Caller: "baseline"}
	t0 := time.Now()
	var plans []sim.Plan
	for i := range 3 {
		p, err := m.Plan(req)
		if err != nil {
			t.Fatal(err)
		}
		m.Admit(req, &p, t0.Add(time.Duration(i)*ms))
		plans = append(plans, p)
	}
	first := plans[0]
	if first.Wait != 0 || first.Running != 1 {
		t.Errorf("first call: wait %v running %d; want 0, 1", first.Wait, first.Running)
	}
	if w := plans[1].Wait; w != first.Total-ms {
		t.Errorf("second call waits %v; want the first's total less 1ms, %v", w, first.Total-ms)
	}
	if plans[1].TTFT != plans[1].Wait+first.TTFT || plans[1].Total != plans[1].Wait+first.Total {
		t.Errorf("second call TTFT %v total %v; want the wait %v added to %v and %v", plans[1].TTFT, plans[1].Total, plans[1].Wait, first.TTFT, first.Total)
	}
	if plans[2].Fault != sim.FaultOverload {
		t.Errorf("third call with one queued and max_queue 1: fault %q; want %q", plans[2].Fault, sim.FaultOverload)
	}
	calls := log.Calls()
	if len(calls) != 3 || calls[1].Wait != plans[1].Wait || calls[1].Caller != "baseline" || calls[2].Fault != sim.FaultOverload {
		t.Errorf("call log %+v; want the three calls with their waits, caller and fault", calls)
	}

	// Complete: the queue is full (one running, one queued): a backend error.
	_, err = m.Complete(context.Background(), req)
	if !errors.Is(err, model.ErrBackend) {
		t.Errorf("Complete on a full queue: %v; want model.ErrBackend", err)
	}

	// Nominal and time-scale 0 runs keep the load-free plan.
	for _, c := range []sim.Config{{NoSleep: true}, {TimeScale: 0}} {
		cfg := sim.Large()
		cfg.Capacity = sim.Capacity{Slots: 1}
		cfg.NoSleep, cfg.TimeScale = c.NoSleep, c.TimeScale
		m, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			p, _ := m.Plan(req)
			want := p
			m.Admit(req, &p, t0)
			if p != want {
				t.Errorf("no_sleep %v time_scale %v: plan changed by admission: %+v", c.NoSleep, c.TimeScale, p)
			}
		}
	}
}

// Offered load per caller is the arrival rate over each caller's span.
func TestOfferedLoad(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(0, 0)
	var calls []sim.Call
	for i := range 11 {
		calls = append(calls, sim.Call{At: t0.Add(time.Duration(i) * 100 * ms), Model: "large", Caller: "a", TokensOut: 10})
		calls = append(calls, sim.Call{At: t0.Add(time.Duration(i) * 50 * ms), Model: "large", Caller: "b", TokensOut: 20, Wait: 4 * ms})
	}
	got := sim.OfferedLoad(calls)
	if len(got) != 2 || got[0].Caller != "a" || got[1].Caller != "b" {
		t.Fatalf("loads %+v; want a and b", got)
	}
	if a := got[0]; a.Calls != 11 || a.CallsPerSec != 10 || a.TokensOutPerSec != 100 || a.MeanWait != 0 {
		t.Errorf("a: %+v; want 11 calls at 10/s, 100 tokens/s", a)
	}
	if b := got[1]; b.CallsPerSec != 20 || b.TokensOutPerSec != 400 || b.MeanWait != 4*ms {
		t.Errorf("b: %+v; want 20/s, 400 tokens/s, mean wait 4ms", b)
	}
}
