package redistest

import (
	"syscall"
	"testing"
	"time"
)

// ProcessCPU is the CPU time (user and kernel) this process has used.
func ProcessCPU(tb testing.TB) time.Duration {
	tb.Helper()
	h, err := syscall.GetCurrentProcess()
	if err != nil {
		tb.Fatal(err)
	}
	var creation, exit, kernel, user syscall.Filetime
	if err := syscall.GetProcessTimes(h, &creation, &exit, &kernel, &user); err != nil {
		tb.Fatal(err)
	}
	// A duration in a Filetime counts 100 ns ticks (Nanoseconds would
	// subtract the epoch of a point in time).
	ticks := func(ft syscall.Filetime) int64 { return int64(ft.HighDateTime)<<32 | int64(ft.LowDateTime) }
	return time.Duration((ticks(kernel) + ticks(user)) * 100)
}
