package transfer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
)

// worker transfers one queue.
type worker struct {
	rdb  redis.UniversalClient
	t    Target
	refs int // guarded by Service.mu

	wakeCh chan struct{} // capacity 1: wake-ups coalesce
	quit   chan struct{}
	done   chan struct{}
}

func newWorker(rdb redis.UniversalClient, t Target) *worker {
	return &worker{
		rdb:    rdb,
		t:      t,
		wakeCh: make(chan struct{}, 1),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
}

func (w *worker) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

func (w *worker) stop() {
	close(w.quit)
	<-w.done
}

// Backoff bounds after a failed run.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// preciseWindow is how close to a due time the worker stops trusting the
// Go timer. An idle Go process waits for timers in epoll with millisecond
// timeouts, so a timer fires up to a millisecond late (0.2–0.8 ms measured
// here); the kernel's nanosleep is late by tens of microseconds. The worker
// sets its timer this much early and sleeps the rest with sleepPrecise,
// which holds a thread for at most this long and does not watch for wake-ups
// or stop (both wait at most this long).
const preciseWindow = 2 * time.Millisecond

func (w *worker) run() {
	defer close(w.done)
	// Script calls are not tied to the worker's lifetime: stop waits for the
	// one in flight rather than abandoning a reply on the connection.
	ctx := context.Background()
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		next, err := w.drain(ctx)
		if err != nil {
			failures++
			wait := backoff(failures)
			next = time.Now().Add(wait)
			w.t.Logger.Warn("redelay: transfer failed; retrying",
				"queue", w.t.Keys.Name, "attempt", failures, "retry_in", wait, "err", err)
		} else if failures > 0 {
			w.t.Logger.Info("redelay: transfer recovered", "queue", w.t.Keys.Name, "after_failures", failures)
			failures = 0
		}
		if wait := time.Until(next); wait > preciseWindow {
			timer.Reset(wait - preciseWindow)
			select {
			case <-w.quit:
				return
			case <-w.wakeCh:
				// Reset above discards a pending expiry (Go 1.23 timers).
				continue
			case <-timer.C:
			}
		}
		select {
		case <-w.quit:
			return
		default:
		}
		if rest := time.Until(next); rest > 0 {
			sleepPrecise(rest)
		}
	}
}

// drain moves due items until a batch comes back short, reclaims expired
// leases, then returns when to run next: when the next item falls due or
// lease expires, at most the sweep interval away.
func (w *worker) drain(ctx context.Context) (next time.Time, err error) {
	start, moved := time.Now(), 0
	defer func() { w.t.Telemetry.Transferred(ctx, start, moved, err) }()
	k := w.t.Keys
	for {
		select {
		case <-w.quit:
			return time.Now().Add(w.t.Sweep), nil
		default:
		}
		res, err := lua.Transfer.Run(ctx, w.rdb, []string{k.Delayed, k.Items, k.Ready}, w.t.BatchSize).Int64Slice()
		if err != nil {
			return time.Time{}, fmt.Errorf("transfer %s: %w", k.Name, err)
		}
		replied := time.Now()
		if len(res) != 4 {
			return time.Time{}, fmt.Errorf("transfer %s: unexpected reply %v", k.Name, res)
		}
		n, nextDue, nowUs := res[0], res[1], res[3]
		moved += int(n)
		if n >= int64(w.t.BatchSize) {
			continue // a full batch: more may be due
		}
		wait := w.t.Sweep
		if nextDue >= 0 {
			// Due times are kept to the microsecond.
			wait = min(wait, time.Duration(nextDue-nowUs)*time.Microsecond)
		}
		lease, err := w.reclaim(ctx)
		if err != nil {
			return time.Time{}, err
		}
		if lease >= 0 {
			wait = min(wait, lease)
		}
		// Due already (it arrived between two reads): go again after a
		// short pause.
		return replied.Add(max(wait, 100*time.Microsecond)), nil
	}
}

// backoff is capped exponential with full jitter.
func backoff(failures int) time.Duration {
	d := maxBackoff
	if failures < 20 {
		d = min(minBackoff<<failures, maxBackoff)
	}
	return d/2 + rand.N(d/2+1)
}
