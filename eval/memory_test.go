package eval

import (
	"os"
	"runtime/debug"
	"testing"
	"time"
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
	restore = BoundRunMemory()
	if got := gcPercent(); got != 100 {
		t.Errorf("GOGC under a lower limit the process had: %d; want the 100 before (no watch follows that limit)", got)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != 100<<20 {
		t.Errorf("a lower limit the process had became %d; want it kept", got)
	}
}

// The limit follows a growing live heap up, never down: under three
// quarters of it nothing changes; past that the live heap gets a third
// of itself as room again.
func TestRaisedLimit(t *testing.T) {
	for _, tc := range []struct{ limit, live, want int64 }{
		{400, 100, 400},
		{400, 300, 400},
		{400, 301, 401},
		{400, 600, 800},
		{400, 0, 400},
	} {
		if got := raisedLimit(tc.limit, tc.live); got != tc.want {
			t.Errorf("raisedLimit(%d, %d) = %d; want %d", tc.limit, tc.live, got, tc.want)
		}
	}
}

// The watch raises a limit the live heap has outgrown, without waiting
// for a run's end, and stops when told. Not parallel: the limit is the
// process's.
func TestWatchRunMemoryRaises(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	const tiny = 64 << 10 // far under any test process's live heap
	debug.SetMemoryLimit(1 << 40)
	stop, done := make(chan struct{}), make(chan struct{})
	go watchRunMemory(tiny, 1<<40, stop, done)
	deadline := time.Now().Add(10 * time.Second)
	for debug.SetMemoryLimit(-1) == 1<<40 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	<-done
	if got := debug.SetMemoryLimit(-1); got == 1<<40 || got <= tiny {
		t.Errorf("limit after the watch saw a live heap over %d bytes: %d; want it raised above", tiny, got)
	}
}

// gcPercent reads the GC's pace (GOGC), leaving it as it was.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}
