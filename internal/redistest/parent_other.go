//go:build !linux

package redistest

import "os/exec"

// DieWithParent does nothing outside Linux, which has no parent-death
// signal: a child outlives a test binary that crashes or is killed.
func DieWithParent(*exec.Cmd) {}

// exited reports false outside Linux, where there is no /proc to look at
// a child without reaping it: a server that dies while starting is seen
// only when it does not answer PING within readyTimeout.
func exited(int) bool { return false }
