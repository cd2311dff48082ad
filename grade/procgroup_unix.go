//go:build unix

package grade

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own, and makes a timeout
// or cancellation kill the whole group: a grader that hangs with a child
// (a shell script's sleep, a test runner's workers) leaves nothing behind.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// killGroup kills what is left of cmd's process group after it exited:
// children it left running in the background.
func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil && cmd.Process.Pid > 0 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
