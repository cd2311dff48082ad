package eval

import (
	"runtime/debug"
	"testing"
)

// BoundRunMemory sets a limit no lower than its floor and restores the one
// before; a lower limit the process was given stands. Not parallel: the
// limit is the process's.
func TestBoundRunMemory(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	debug.SetMemoryLimit(1 << 40)
	restore := BoundRunMemory()
	if got := debug.SetMemoryLimit(-1); got < runMemoryFloor || got >= 1<<40 {
		t.Errorf("limit during the run: %d; want at least %d, under the 1 TiB before", got, runMemoryFloor)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != 1<<40 {
		t.Errorf("limit after restore: %d; want the 1 TiB before", got)
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
