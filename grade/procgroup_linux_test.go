//go:build linux

package grade

import (
	"context"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestKeptGraderOutlivesItsStarter starts a kept grader from a goroutine
// locked to its thread that then exits, as crab's generator does: Go ends
// that thread, and a grader forked by it would receive its parent-death
// signal though crab runs on.
//
// In a PID namespace the grader is the namespace's init, which the kernel
// spares that signal, so the test takes the process-group isolation (the
// fallback where namespaces are refused) to see it.
func TestKeptGraderOutlivesItsStarter(t *testing.T) {
	was := firstIsolation.Load()
	firstIsolation.Store(int32(len(isolations) - 1))
	defer firstIsolation.Store(was)
	started := make(chan *exec.Cmd, 1)
	// Go never ends the process's main thread (it parks it instead), so
	// the starter tries again until it runs on another thread.
	var starter func()
	starter = func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if syscall.Gettid() == syscall.Getpid() {
			runtime.UnlockOSThread()
			go starter()
			return
		}
		cmd, err := startKept(func() *exec.Cmd { return exec.CommandContext(context.Background(), "sleep", "30") })
		if err != nil {
			t.Errorf("start: %v", err)
			started <- nil
			return
		}
		started <- cmd
	}
	go starter()
	cmd := <-started
	if cmd == nil {
		return
	}
	defer killTree(cmd)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// The starter's thread has ended (or is ending); a grader tied to it
	// is killed within moments.
	select {
	case err := <-exited:
		t.Fatalf("the kept grader died with the thread that asked for it: %v", err)
	case <-time.After(500 * time.Millisecond):
	}
}
