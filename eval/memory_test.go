package eval

import (
	"os"
	"runtime/debug"
	"testing"
)

// BoundRunMemory sets a limit no lower than its floor, turns the GC's
// proportional pace off under it, and restores both; a lower limit the
// process was given stands. Not parallel: the limit is the process's.
func TestBoundRunMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	debug.SetMemoryLimit(1 << 40)
	restore := BoundRunMemory()
	if got := debug.SetMemoryLimit(-1); got < runMemoryFloor || got >= 1<<40 {
		t.Errorf("limit during the run: %d; want at least %d, under the 1 TiB before", got, runMemoryFloor)
	}
	if os.Getenv("GOGC") == "" {
		if got := gcPercent(); got != -1 {
			t.Errorf("GOGC during the run: %d; want off (-1), the limit alone starting collections", got)
		}
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("limit after restore: %d; want the 1 TiB before", got)
	}
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC after restore: %d; want the 100 before", got)
	}
	// Overlapping runs: the last to end restores the limit.
	first, second := BoundRunMemory(), BoundRunMemory()
	first()
	if got := debug.SetMemoryLimit(-1); got >= 1<<40 {
		t.Errorf("limit with a run still under way: %d; want it still bounded", got)
	}
	second()
	second()
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("limit after both runs: %d; want the 1 TiB before", got)
	}
	debug.SetMemoryLimit(100 << 20)
	BoundRunMemory()()
	if got := debug.SetMemoryLimit(-1); got != 100<<20 {
		t.Errorf("a lower limit the process had became %d; want it kept", got)
	}
}

// gcPercent reads the GC's pace (GOGC), leaving it as it was.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}
