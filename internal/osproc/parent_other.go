//go:build !linux

package osproc

import "os/exec"

// DieWithParent does nothing outside Linux, which has no parent-death
// signal: a child outlives a process that crashes or is killed.
func DieWithParent(*exec.Cmd) {}
