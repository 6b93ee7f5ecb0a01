//go:build linux

package mover

import (
	"runtime"
	"syscall"
	"time"
)

// prSetTimerSlack is prctl's PR_SET_TIMERSLACK (linux/prctl.h).
const prSetTimerSlack = 29

// sleepPrecise sleeps for d with the kernel's timer rather than the Go
// runtime's (late by up to a millisecond in an idle process). The thread's
// timer slack, 50 µs by default, is lowered to 1 ns for the sleep and
// reset after it, since the kernel may end a sleep that much late (see
// docs/decisions.md, "Transfer"). It blocks the calling goroutine's
// thread; keep d short.
func sleepPrecise(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_, _, slackErr := syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 1, 0)
	if slackErr == 0 {
		defer syscall.RawSyscall(syscall.SYS_PRCTL, prSetTimerSlack, 0, 0) // 0: back to the thread's default
	}
	ts := syscall.NsecToTimespec(int64(d))
	for {
		// Interrupted (the runtime preempts with signals): sleep the rest.
		if err := syscall.Nanosleep(&ts, &ts); err != syscall.EINTR {
			return
		}
	}
}
