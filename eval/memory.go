package eval

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// runMemoryFloor is the least soft memory limit BoundRunMemory sets: a
// run whose heap the garbage collector's default pace (GOGC=100) keeps
// under it never meets the limit, so small runs are not slowed at all.
const runMemoryFloor = 448 << 20

// BoundRunMemory sets a soft memory limit (debug.SetMemoryLimit) for a
// run's requests, once its setup (tasks, recordings) is loaded, turns the
// garbage collector's proportional pace (GOGC) off so that the limit alone
// starts a collection, and returns the function that restores both. The
// limit is twice the heap live then, and never under runMemoryFloor: a
// run of a million tasks, whose heap is about 300 MB live while its
// requests run (170 MB of it the setup), collects as the heap nears the
// limit, and a run whose setup alone is large still gets as much room as
// its setup holds. A run whose garbage fits under the limit is never
// collected while it sends: a collection's stop-the-world phases wait for
// every thread of the process, so on a busy machine one thread the kernel
// has descheduled holds up every release and every response. At 5,000
// requests/s on 2 cores shared with two CPU-bound processes, schedule lag
// p99 was 40 ms at the default pace (about 30 collections in 5 s), 8 ms
// at GOGC=400 and 0.18 ms without collections. The price is memory: that
// run's peak RSS went from 56 MB to 377 MB, which the limit bounds. A GOGC
// the process was given stands. It is a process-wide setting, for the
// process owner (crab run) to make; the library never calls it.
//
// A limit must never starve the run: a heap that grows while the
// requests run (a large in-memory cache, many long answers in flight)
// would otherwise make the collector run back to back, and its CPU would
// land in the latencies the run measures. So while the limit is set, a
// watch reads the live heap a few times a second and raises the limit
// (never lowers it) whenever the live heap passes three quarters of it
// (raisedLimit): the collector always keeps at least a third of the live
// heap as room, however the heap grows. GOGC is turned off only under a
// limit the watch follows: under a lower GOMEMLIMIT the process was given
// the default pace stays, so a heap that outgrows that limit is still
// collected in proportion.
//
// Runs that overlap in one process (tests) share the first one's limit,
// and the last to end restores the limit and pace before.
func BoundRunMemory() (restore func()) {
	runMemory.Lock()
	defer runMemory.Unlock()
	runMemory.runs++
	if runMemory.runs == 1 {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		limit := max(int64(runMemoryFloor), int64(min(2*ms.HeapAlloc, math.MaxInt64/2)))
		runMemory.before = debug.SetMemoryLimit(-1)
		// A lower limit the process was given (GOMEMLIMIT) stands.
		if runMemory.set = limit < runMemory.before; runMemory.set {
			debug.SetMemoryLimit(limit)
			runMemory.stop = make(chan struct{})
			runMemory.done = make(chan struct{})
			go watchRunMemory(limit, runMemory.before, runMemory.stop, runMemory.done)
		}
		// Only the limit the watch follows may be the heap's one bound.
		runMemory.gcPercent = -1
		if runMemory.set && os.Getenv("GOGC") == "" {
			runMemory.gcPercent = debug.SetGCPercent(-1)
		}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			runMemory.Lock()
			defer runMemory.Unlock()
			if runMemory.runs--; runMemory.runs != 0 {
				return
			}
			if runMemory.set {
				close(runMemory.stop)
				<-runMemory.done
				debug.SetMemoryLimit(runMemory.before)
			}
			if runMemory.gcPercent >= 0 {
				debug.SetGCPercent(runMemory.gcPercent)
			}
		})
	}
}

// runMemory is what BoundRunMemory's overlapping runs share.
var runMemory struct {
	sync.Mutex
	runs   int   // runs under way
	before int64 // the limit before the first of them
	set    bool  // whether the first set one
	stop   chan struct{}
	done   chan struct{}
	// gcPercent is the GOGC before the first run turned it off; -1
	// when it was left alone.
	gcPercent int
}

// memoryWatchEvery is how often the watch reads the live heap.
const memoryWatchEvery = 200 * time.Millisecond

// watchRunMemory raises the limit as the live heap grows (raisedLimit),
// never above ceiling (the limit before the run), until stop closes.
func watchRunMemory(limit, ceiling int64, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(memoryWatchEvery)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			continue
		}
		live := int64(min(sample[0].Value.Uint64(), math.MaxInt64/2))
		if next := min(raisedLimit(limit, live), ceiling); next > limit {
			limit = next
			debug.SetMemoryLimit(limit)
		}
	}
}

// raisedLimit is the limit for a live heap of live bytes under a limit of
// limit: unchanged while the live heap is under three quarters of it,
// else four thirds of the live heap, so the collector keeps a third of
// the live heap as room.
func raisedLimit(limit, live int64) int64 {
	if live <= limit/4*3 {
		return limit
	}
	return live + live/3
}
