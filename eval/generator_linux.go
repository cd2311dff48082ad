//go:build linux

package eval

import (
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

const threadSleepSupported = true

// prSetTimerslack is PR_SET_TIMERSLACK from <linux/prctl.h>.
const prSetTimerslack = 29

// lockGeneratorThread wires the calling goroutine to its OS thread and sets
// that thread's timer slack to 1 ns (the default 50 us would be added to
// every wake-up). With realtime it also asks for SCHED_FIFO at the lowest
// real-time priority, which a process without the privilege is refused; it
// reports whether the thread got it.
func lockGeneratorThread(realtime bool) bool {
	runtime.LockOSThread()
	syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerslack, 1, 0)
	if !realtime {
		return false
	}
	param := struct{ priority int32 }{1}
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedFIFO, uintptr(unsafe.Pointer(&param)))
	return errno == 0
}

// schedFIFO is SCHED_FIFO from <sched.h>.
const schedFIFO = 1

// threadSleeper sleeps the generator thread in the kernel.
type threadSleeper struct{ ts syscall.Timespec }

// sleep sleeps for d or until a signal arrives, keeping the goroutine's P
// while the thread sleeps: the scheduler sees a running goroutine, so waking
// never waits for a P. A preemption signal ends the sleep early, and the
// caller's loop reaches a preemption point. (An ordinary system call, which
// lets the scheduler hand the P away, was measured and wakes no better: the
// P must then be won back.)
func (s *threadSleeper) sleep(d time.Duration) {
	s.ts = syscall.NsecToTimespec(int64(d))
	syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&s.ts)), 0, 0)
}
