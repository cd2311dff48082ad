//go:build unix && !linux

package grade

import (
	"os/exec"
	"syscall"
)

// Isolation names how graders are isolated: a process group here (a
// process that calls setsid can outlive its grade).
func Isolation() string { return "process group" }

// start starts the command mk builds in a process group of its own, and
// makes a timeout or cancellation kill the whole group: a grader that
// hangs with a child (a shell script's sleep, a test runner's workers)
// leaves nothing behind.
func start(mk func() *exec.Cmd) (*exec.Cmd, error) {
	cmd := mk()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	return cmd, cmd.Start()
}

// killGroup kills what is left of cmd's process group after it exited:
// children it left running in the background.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
