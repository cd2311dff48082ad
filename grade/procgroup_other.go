//go:build !unix

package grade

import "os/exec"

// ownGroup: without process groups, a timeout kills the grader itself.
func ownGroup(*exec.Cmd) {}

// killGroup has nothing to kill without process groups.
func killGroup(*exec.Cmd) {}
