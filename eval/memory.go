package eval

import (
	"math"
	"runtime"
	"runtime/debug"
)

// runMemoryFloor is the least soft memory limit BoundRunMemory sets: a
// run whose heap the garbage collector's default pace (GOGC=100) keeps
// under it never meets the limit, so small runs are not slowed at all.
const runMemoryFloor = 448 << 20

// BoundRunMemory sets a soft memory limit (debug.SetMemoryLimit) for a
// run's requests, once its setup (tasks, recordings) is loaded, and
// returns the function that restores the limit before. The limit is
// twice the heap live then, and never under runMemoryFloor: at the
// default pace a run of a million tasks, whose setup is about 170 MB
// live, would let its heap grow to twice what the requests add to it
// before collecting (about 600 MB); under the limit it collects a little
// more often instead, and a run whose setup alone is large still gets
// as much room as its setup holds. It is a process-wide setting, for the
// process owner (crab run) to make; the library never calls it.
func BoundRunMemory() (restore func()) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	limit := max(int64(runMemoryFloor), int64(min(2*ms.HeapAlloc, math.MaxInt64/2)))
	before := debug.SetMemoryLimit(-1)
	if before < limit {
		// A lower limit the process was given (GOMEMLIMIT) stands.
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(before) }
}
