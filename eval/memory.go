package eval

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
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
		}
		// The limit bounds the heap either way: the process's own, or
		// the one just set.
		runMemory.gcPercent = -1
		if os.Getenv("GOGC") == "" {
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
	// gcPercent is the GOGC before the first run turned it off; -1
	// when it was left alone.
	gcPercent int
}
