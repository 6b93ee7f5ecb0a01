//go:build unix

package redistest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the CPU time (user and system) this process has used.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
