//go:build linux

package osproc

import (
	"os/exec"
	"syscall"
)

// DieWithParent makes the kernel kill cmd's process with SIGKILL when the
// thread that started it exits, so that a test binary or benchmark run
// that crashes or is killed leaves no server or child process behind.
// Call it before cmd.Start.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
