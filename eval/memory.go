package eval

import (
	"math"
	"runtime"
	"runtime/debug"
	"sync"
)

// runMemoryFloor is the least soft memory limit BoundRunMemory sets: a
// run whose heap the garbage collector's default pace (GOGC=100) keeps
// under it never meets the limit, so small runs are not slowed at all.
const runMemoryFloor = 448 << 20

// BoundRunMemory sets a soft memory limit (debug.SetMemoryLimit) for a
// run's requests, once its setup (tasks, recordings) is loaded, and
// returns the function that restores the limit before. The limit is
// twice the heap live then, and never under runMemoryFloor: at the
// default pace a run of a million tasks, whose heap is about 300 MB live
// while its requests run (170 MB of it the setup), would let it grow to
// about 600 MB before collecting; under the limit it collects more often
// instead, and a run whose setup alone is large still gets as much room
// as its setup holds. It is a process-wide setting, for the
// process owner (crab run) to make; the library never calls it.
//
// Runs that overlap in one process (tests) share the first one's limit,
// and the last to end restores the limit before.
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
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			runMemory.Lock()
			defer runMemory.Unlock()
			if runMemory.runs--; runMemory.runs == 0 && runMemory.set {
				debug.SetMemoryLimit(runMemory.before)
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
}
