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

func (w *worker) run() {
	defer close(w.done)
	// Script calls are not tied to the worker's lifetime: stop waits for the
	// one in flight rather than abandoning a reply on the connection.
	ctx := context.Background()
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		wait, err := w.drain(ctx)
		if err != nil {
			failures++
			wait = backoff(failures)
			w.t.Logger.Warn("redelay: transfer failed; retrying",
				"queue", w.t.Keys.Name, "attempt", failures, "retry_in", wait, "err", err)
		} else if failures > 0 {
			w.t.Logger.Info("redelay: transfer recovered", "queue", w.t.Keys.Name, "after_failures", failures)
			failures = 0
		}
		timer.Reset(wait)
		select {
		case <-w.quit:
			return
		case <-w.wakeCh:
			// Reset below discards a pending expiry (Go 1.23 timers).
		case <-timer.C:
		}
	}
}

// drain moves due items until a batch comes back short, reclaims expired
// leases, then returns how long to sleep before the next item falls due or
// lease expires (at most the sweep interval).
func (w *worker) drain(ctx context.Context) (wait time.Duration, err error) {
	start, moved := time.Now(), 0
	defer func() { w.t.Telemetry.Transferred(ctx, start, moved, err) }()
	k := w.t.Keys
	for {
		select {
		case <-w.quit:
			return w.t.Sweep, nil
		default:
		}
		res, err := lua.Transfer.Run(ctx, w.rdb, []string{k.Delayed, k.Items, k.Ready}, w.t.BatchSize).Int64Slice()
		if err != nil {
			return 0, fmt.Errorf("transfer %s: %w", k.Name, err)
		}
		if len(res) != 4 {
			return 0, fmt.Errorf("transfer %s: unexpected reply %v", k.Name, res)
		}
		n, next, nowUs := res[0], res[1], res[3]
		moved += int(n)
		if n >= int64(w.t.BatchSize) {
			continue // a full batch: more may be due
		}
		wait := w.t.Sweep
		if next >= 0 {
			// To the microsecond: the item is due when the server's clock
			// reaches the start of its millisecond.
			wait = min(wait, time.Duration(next*1000-nowUs)*time.Microsecond)
		}
		lease, err := w.reclaim(ctx)
		if err != nil {
			return 0, err
		}
		if lease >= 0 {
			wait = min(wait, lease)
		}
		// Due already (it arrived between two reads): go again after a
		// short pause.
		return max(wait, 100*time.Microsecond), nil
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
