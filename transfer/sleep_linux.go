//go:build linux

package transfer

import (
	"syscall"
	"time"
)

// sleepPrecise sleeps for d with the kernel's timer (late by tens of
// microseconds) rather than the Go runtime's (late by up to a millisecond
// in an idle process). It blocks the calling goroutine's thread; keep d
// short.
func sleepPrecise(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for {
		// Interrupted (the runtime preempts with signals): sleep the rest.
		if err := syscall.Nanosleep(&ts, &ts); err != syscall.EINTR {
			return
		}
	}
}
