//go:build !linux

package mover

import "time"

// sleepPrecise sleeps for d. Outside Linux it is time.Sleep, as precise as
// the Go runtime's timers.
func sleepPrecise(d time.Duration) { time.Sleep(d) }
