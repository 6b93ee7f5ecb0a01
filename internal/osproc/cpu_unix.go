//go:build unix

package osproc

import (
	"fmt"
	"syscall"
	"time"
)

// CPU is the CPU time (user and system) this process has used.
func CPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}
