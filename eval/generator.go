package eval

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"
)

// GeneratorMode is how a Runner's load generator waits for each intended
// send time. The command that runs an experiment chooses it: the library
// default changes nothing outside the run.
type GeneratorMode int

const (
	// GeneratorPortable sleeps on a Go timer and polls the clock near each
	// send time. It works everywhere and changes no process-wide setting.
	GeneratorPortable GeneratorMode = iota
	// GeneratorDedicated runs the generator on its own OS thread: for each
	// pass it raises GOMAXPROCS by one and asks for real-time scheduling
	// (SCHED_FIFO, lowest priority) where the process may have it (root or
	// CAP_SYS_NICE), so a busy machine delays a release only by the
	// kernel's wake-up latency. Linux only; elsewhere it is
	// GeneratorPortable.
	GeneratorDedicated
)

// waitMode is how the generator waits for each intended send time.
type waitMode int

const (
	// waitUnset leaves the choice to the Runner's GeneratorMode.
	waitUnset waitMode = iota
	// waitThread runs the generator on its own OS thread, holding one extra
	// P (GOMAXPROCS is raised by one for the pass), and sleeps in the kernel
	// with a fine timer slack. Waking never waits for the Go scheduler: the
	// thread already holds its P, so a busy machine delays a release only by
	// the kernel's wake-up latency. Linux only; elsewhere it is waitYield.
	waitThread
	// waitYield sleeps on a Go timer until spinWindow before the send time
	// and then polls the clock, yielding between polls.
	waitYield
)

func (m waitMode) String() string {
	switch m {
	case waitThread:
		return "thread"
	case waitYield:
		return "yield"
	}
	return "?"
}

// generatorOptions are the generator's settings; the zero value is the
// default (the wait the Runner's GeneratorMode chooses, with workers started
// on demand). Tests and the lag harness set them on a Runner to compare
// variants.
type generatorOptions struct {
	// wait is how the generator waits for each intended send time;
	// waitUnset: as the Runner's GeneratorMode says.
	wait waitMode
	// eagerWorkers starts all Concurrency workers before the first
	// release instead of on demand.
	eagerWorkers bool
	// noRealtime keeps the generator thread at normal priority. Otherwise
	// it asks for real-time scheduling (SCHED_FIFO, lowest priority) where
	// the process may have it (root or CAP_SYS_NICE); elsewhere the request
	// is refused and the thread keeps its normal priority. The thread only
	// sleeps and hands jobs over, so it takes little CPU, but when it wakes
	// it runs at once instead of waiting behind the target's and the
	// workers' threads on a busy machine.
	noRealtime bool
	// threadHook, if set, runs on the generator thread as it ends (the lag
	// harness reads the thread's scheduler statistics).
	threadHook func()
}

// with fills an unset wait from the mode a Runner was given: a dedicated
// thread asking for real-time priority, or the portable timer wait.
func (o generatorOptions) with(mode GeneratorMode) generatorOptions {
	if o.wait == waitUnset {
		o.wait = waitYield
		if mode == GeneratorDedicated {
			o.wait = waitThread
		}
	}
	return o
}

// sleepChunk bounds one kernel sleep of the generator thread, so that it
// notices a cancelled run promptly.
const sleepChunk = 5 * time.Millisecond

// generate calls release(i, intended) for every offset, in order, never
// before intended = start+offsets[i]. When ctx ends it stops waiting and
// releases the remaining requests at once (their workers record them as
// cancelled), so every scheduled request is released exactly once. It
// returns how the generator waited, for the run's manifest (e.g. "thread,
// SCHED_FIFO, GOMAXPROCS 3"), since the lag a run can reach depends on it.
func generate(ctx context.Context, o generatorOptions, start time.Time, offsets []time.Duration, release func(i int, intended time.Time)) string {
	mode := o.wait
	if mode != waitThread || !threadSleepSupported {
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for i, off := range offsets {
			intended := start.Add(off)
			waitUntil(ctx, timer, intended)
			release(i, intended)
		}
		return fmt.Sprintf("%s, GOMAXPROCS %d", waitYield, runtime.GOMAXPROCS(0))
	}
	reserveP()
	defer unreserveP()
	procs := runtime.GOMAXPROCS(0)
	priority := "normal priority"
	done := make(chan struct{})
	go func() {
		defer close(done)
		// The goroutine ends without unlocking, so the thread, with its
		// changed timer slack, ends with it.
		if lockGeneratorThread(!o.noRealtime) {
			priority = "SCHED_FIFO"
		}
		if o.threadHook != nil {
			defer o.threadHook()
		}
		var s threadSleeper
		for i, off := range offsets {
			intended := start.Add(off)
			for ctx.Err() == nil {
				d := time.Until(intended)
				if d <= 0 {
					break
				}
				s.sleep(min(d, sleepChunk))
			}
			release(i, intended)
		}
	}()
	<-done
	return fmt.Sprintf("%s, %s, GOMAXPROCS %d", mode, priority, procs)
}

// reservedPs counts the passes holding an extra P; the first raises
// GOMAXPROCS by one and the last restores it.
var (
	reservedMu  sync.Mutex
	reservedPs  int
	reservedOld int
)

func reserveP() {
	reservedMu.Lock()
	defer reservedMu.Unlock()
	if reservedPs == 0 {
		reservedOld = runtime.GOMAXPROCS(0)
		runtime.GOMAXPROCS(reservedOld + 1)
	}
	reservedPs++
}

func unreserveP() {
	reservedMu.Lock()
	defer reservedMu.Unlock()
	reservedPs--
	if reservedPs == 0 {
		runtime.GOMAXPROCS(reservedOld)
	}
}
