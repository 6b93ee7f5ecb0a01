//go:build !linux

package contestants

import "os/exec"

// DieWithParent does nothing outside Linux, which has no parent-death
// signal: a child outlives a benchmark run that crashes or is killed.
func DieWithParent(*exec.Cmd) {}
