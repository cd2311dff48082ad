//go:build linux

package grade

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
)

// An isolation is how a grader is started so that crab can end it with
// everything it started. A process group alone is escaped by a process
// that calls setsid (a daemon); a PID namespace is not: when the grader,
// the namespace's first process, exits or is killed, the kernel kills
// every process left in it, whatever session or group it moved to.
// Creating one takes CAP_SYS_ADMIN (root), or a user namespace of its own
// (any user, where the kernel and its security modules allow unprivileged
// user namespaces); where neither is allowed — a container whose seccomp
// profile refuses namespaces, a host that forbids unprivileged ones —
// crab falls back to the process group.
type isolation struct {
	name  string
	flags uintptr
	user  bool // a user namespace mapping the caller's own uid and gid, so files read and write as before
}

var isolations = []isolation{
	{name: "pid namespace", flags: syscall.CLONE_NEWPID},
	{name: "user and pid namespace", flags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID, user: true},
	{name: "process group"},
}

// firstIsolation indexes the first isolation not yet refused here. What
// the kernel allows is a property of the host and of crab's privileges,
// the same for every grader of the process, so it is learnt once (by the
// first grader whose start is refused) rather than per command.
var firstIsolation atomic.Int32

// Isolation names how graders are isolated on this host as far as crab
// has learnt: "pid namespace", "user and pid namespace" or "process
// group" (a process that calls setsid can outlive its grade).
func Isolation() string { return isolations[firstIsolation.Load()].name }

// start starts the command mk builds in the strongest isolation this host
// allows, each in a process group of its own so that a timeout or a
// cancellation kills the grader with its children.
func start(mk func() *exec.Cmd) (*exec.Cmd, error) { return startIn(mk, false) }

// startKept is start for a grader that lives across answers (protocol
// lines): it is also killed when crab exits, however crab exits.
//
// The kernel sends the parent-death signal when the thread that forked
// the child exits, not the process, and Go ends a thread whose goroutine
// exits while locked to it (crab's generator locks its thread). So a kept
// grader is forked by one thread that stays locked, idle, for as long as
// crab runs: the signal then comes only with crab's own end.
func startKept(mk func() *exec.Cmd) (*exec.Cmd, error) {
	keptOnce.Do(func() {
		keptStarts = make(chan keptStart)
		go keptSpawner(keptStarts)
	})
	reply := make(chan keptResult, 1)
	keptStarts <- keptStart{mk: mk, reply: reply}
	r := <-reply
	return r.cmd, r.err
}

type keptStart struct {
	mk    func() *exec.Cmd
	reply chan<- keptResult
}

type keptResult struct {
	cmd *exec.Cmd
	err error
}

var (
	keptOnce   sync.Once
	keptStarts chan keptStart
)

// keptSpawner forks every kept grader from its own thread, which it never
// unlocks and never leaves.
func keptSpawner(starts <-chan keptStart) {
	runtime.LockOSThread()
	for s := range starts {
		cmd, err := startIn(s.mk, true)
		s.reply <- keptResult{cmd, err}
	}
}

func startIn(mk func() *exec.Cmd, kept bool) (*exec.Cmd, error) {
	for i := int(firstIsolation.Load()); ; i++ {
		cmd := mk()
		iso := isolations[i]
		attr := &syscall.SysProcAttr{Setpgid: true, Cloneflags: iso.flags}
		if kept {
			attr.Pdeathsig = syscall.SIGKILL
		}
		if iso.user {
			uid, gid := os.Getuid(), os.Getgid()
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.GidMappingsEnableSetgroups = false
		}
		cmd.SysProcAttr = attr
		cmd.Cancel = func() error { return killTree(cmd) }
		err := cmd.Start()
		if err == nil || i == len(isolations)-1 || !refused(err) {
			return cmd, err
		}
		firstIsolation.CompareAndSwap(int32(i), int32(i+1))
	}
}

// refused reports an error of clone refusing a namespace, as opposed to
// one of the program (not found, not executable), which no other
// isolation would cure.
func refused(err error) bool {
	for _, e := range []error{syscall.EPERM, syscall.EINVAL, syscall.ENOSPC, syscall.EUSERS, syscall.ENOSYS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// killTree kills the grader's process group; in a PID namespace, killing
// the grader ends everything else in it.
func killTree(cmd *exec.Cmd) error {
	if cmd.Process == nil || cmd.Process.Pid <= 0 {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
	return err
}

// killGroup kills what is left of cmd's process group after it exited:
// children it left running in the background (in a PID namespace the
// kernel has killed them already).
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
