package sim

import (
	"container/heap"
	"sync"
	"time"
)

// Capacity models the serving capacity of a simulated model in the manner
// of a continuous-batching engine: a limited number of sequences decoded
// at once, time per output token that grows with the number running, and
// a queue beyond that, so latency rises with the load the callers put on
// it. All arms (and every caller) that use one simulated model share its
// capacity, as they would share one deployment. A nil or zero Capacity
// means latency does not depend on load.
//
// A call takes a slot when one is free, else it waits in a first-come
// first-served queue for the earliest slot to free; the wait is part of
// its time to first content and of its latency. Once it runs, its prefill
// takes the plan's time and each output token takes the plan's time per
// token times 1 + Slowdown·(running − 1), running being the sequences
// decoding when it starts, itself included. The rate is fixed when a call
// starts (a later call does not slow one already running), which keeps
// every call's timing decided at its arrival. A call its caller abandons
// keeps its slot until its planned end.
//
// The capacity acts where latency is waited: at time_scale 0 and in
// nominal runs (no_sleep, outcome tables) nothing runs concurrently in
// simulated time, and latency stays the load-free plan's.
type Capacity struct {
	// Slots is how many sequences run at once; further calls wait in a
	// first-come first-served queue. 0 disables the capacity model.
	Slots int `yaml:"slots" json:"slots"`
	// Slowdown is how much each further running sequence adds to the time
	// per output token, as a share of it: 0.02 makes a token take 1.5
	// times as long with 26 sequences running. 0 keeps it constant.
	Slowdown float64 `yaml:"slowdown" json:"slowdown"`
	// MaxQueue is the most calls waiting for a slot; a call arriving at a
	// full queue fails at once, as an overloaded server does (a server
	// error, HTTP 503 from crab sim-server). 0 means no limit.
	MaxQueue int `yaml:"max_queue" json:"max_queue"`
}

// Enabled reports whether the capacity model is on: whether a model's
// latency depends on the load put on it.
func (c *Capacity) Enabled() bool { return c != nil && c.Slots > 0 }

// Slot is where the scheduler put one call.
type Slot struct {
	Wait    time.Duration // from arrival to the start of its prefill
	Running int           // sequences running when it starts, itself included
	Factor  float64       // the time per output token's multiplier, 1 + Slowdown·(Running − 1)
	End     time.Duration // when it ends, on the scheduler's clock
	Queued  int           // calls already waiting for a slot when it arrived
}

// Scheduler is the capacity arithmetic without a clock: calls are given
// their arrival time on the scheduler's own timeline, so it can be driven
// by a wall clock or by a test. Its zero value is unusable; use
// NewScheduler. It is not safe for concurrent use.
type Scheduler struct {
	c     Capacity
	ends  endHeap         // planned ends of the calls holding a slot
	waits []time.Duration // starts of the calls still waiting, in order
	last  time.Duration
}

// NewScheduler returns an empty scheduler for c (which must be Enabled).
func NewScheduler(c Capacity) *Scheduler { return &Scheduler{c: c} }

// Admit schedules a call arriving at at (on the scheduler's timeline)
// whose plan takes prefill to its first content and decode for its output
// tokens at the load-free rate. Arrivals earlier than the last one are
// taken as arriving with it. ok is false when the queue is full: the call
// is refused and takes nothing.
func (s *Scheduler) Admit(at, prefill, decode time.Duration) (slot Slot, ok bool) {
	at = max(at, s.last)
	s.last = at
	for len(s.ends) > 0 && s.ends[0] <= at {
		heap.Pop(&s.ends)
	}
	n := 0
	for n < len(s.waits) && s.waits[n] <= at {
		n++
	}
	s.waits = s.waits[n:]
	slot.Queued = len(s.waits)
	if s.c.MaxQueue > 0 && slot.Queued >= s.c.MaxQueue {
		return Slot{Queued: slot.Queued}, false
	}
	start := at
	if len(s.ends) >= s.c.Slots {
		// FIFO: starts never go back in time, so the earliest end is this
		// call's slot and every call still holding one started before it.
		start = max(at, heap.Pop(&s.ends).(time.Duration))
	}
	slot.Running = 1
	for _, e := range s.ends {
		if e > start {
			slot.Running++
		}
	}
	slot.Wait = start - at
	slot.Factor = 1 + s.c.Slowdown*float64(slot.Running-1)
	slot.End = start + prefill + time.Duration(float64(decode)*slot.Factor)
	heap.Push(&s.ends, slot.End)
	if start > at {
		s.waits = append(s.waits, start)
	}
	return slot, true
}

// endHeap is a min-heap of planned ends.
type endHeap []time.Duration

func (h endHeap) Len() int           { return len(h) }
func (h endHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h endHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *endHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *endHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// pool is a model's scheduler on the wall clock, shared by every caller
// of the model. Its timeline starts at its first call.
type pool struct {
	mu    sync.Mutex
	s     *Scheduler
	epoch time.Time
}

func (p *pool) admit(at time.Time, prefill, decode time.Duration) (Slot, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.epoch.IsZero() {
		p.epoch = at
	}
	return p.s.Admit(at.Sub(p.epoch), prefill, decode)
}
