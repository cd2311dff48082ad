package capacity

import (
	"math"
	"time"

	"github.com/crab-testbed/crab/model/sim"
	"github.com/crab-testbed/crab/stack"
)

// SimKnee is the rate, in requests per second of the models' time, at
// which an arm's calls fill a simulated model's capacity: what the
// models' own parameters imply, for checking a sweep's knee against.
//
// A simulated model with capacity {slots c, slowdown σ} holds a slot for
// each call's prefill, base + tokens in × prefill per token, plus its
// decode, tokens out × decode per token × (1 + σ·(running − 1)), all
// times the call's jitter and slow-tail factor (jitter averages 1, the
// tail adds tail rate × (tail factor − 1)). At saturation every slot is
// busy, running = c, so one request of the arm occupies the model for
//
//	L = Σ over its calls of E[mult] × (prefill + decode × (1 + σ(c − 1)))
//
// slot-seconds on average, and the model completes at most c / L of the
// arm's requests per second: beyond that rate its queue grows without
// bound. The arm's knee is the least of c / L over the models it calls
// (a router spreads its calls over two), with c the smaller of the slots
// and the experiment's concurrency, which caps the arm's model calls in
// flight. Calls that took no slot (a server error, a hang, a refusal by
// a full queue) add nothing; cache hits make no call at all, which is how
// a cache raises the knee.
//
// calls are the arm's calls during requests requests, at a rate where the
// deployment kept up; models are the experiment's model specs (only
// simulated ones with a capacity count). It returns NaN when no call
// reached a model with a capacity.
func SimKnee(calls []sim.Call, requests int, models []stack.ModelSpec, concurrency int) float64 {
	load := map[string]float64{}
	cfgs := map[string]sim.Config{}
	for _, m := range models {
		if m.Backend != "" && m.Backend != stack.BackendSim || !m.Capacity.Enabled() {
			continue
		}
		cfg := sim.Small()
		if m.Kind == sim.KindLarge {
			cfg = sim.Large()
		}
		cfg.Capacity = *m.Capacity
		cfgs[m.Name] = cfg
	}
	for _, c := range calls {
		cfg, ok := cfgs[c.Model]
		if !ok || c.Fault != "" {
			continue
		}
		slots := slotsOf(cfg, concurrency)
		mult := 1 + cfg.TailRate*(max(cfg.TailFactor, 1)-1)
		pre := cfg.Base + cfg.PrefillPerToken*time.Duration(c.TokensIn)
		dec := float64(cfg.DecodePerToken*time.Duration(c.TokensOut)) * (1 + cfg.Capacity.Slowdown*float64(slots-1))
		load[c.Model] += mult * (float64(pre) + dec) / 1e9
	}
	knee := math.NaN()
	for name, l := range load {
		if l <= 0 || requests <= 0 {
			continue
		}
		k := float64(slotsOf(cfgs[name], concurrency)) / (l / float64(requests))
		if math.IsNaN(knee) || k < knee {
			knee = k
		}
	}
	return knee
}

// slotsOf is the sequences the model runs at once for one arm: its slots,
// or the experiment's concurrency when that is fewer.
func slotsOf(cfg sim.Config, concurrency int) int {
	if concurrency > 0 && concurrency < cfg.Capacity.Slots {
		return concurrency
	}
	return cfg.Capacity.Slots
}
