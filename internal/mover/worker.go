package mover

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/redelay/redelay/internal/store"
)

// worker transfers one queue.
type worker struct {
	t    Target
	refs int     // guarded by Service.mu
	srv  *Server // its client's server; nil for RunOnce

	wakeCh chan struct{} // capacity 1: wake-ups coalesce
	pause  *Pause
	// What to announce (see Target.Announce), merged from every
	// registration of the queue, and whether it was.
	annMu       sync.Mutex
	announceQ   bool
	codec       string
	announced   bool
	announcedAt time.Time // when it last announced the queue (again every AnnounceEvery)
	// specs caches parsed schedule specs, and bad holds the record last
	// logged of each schedule that cannot be planned; only the worker's
	// goroutine uses them.
	specs map[string]cron.Schedule
	bad   map[string]string
	quit  chan struct{}
	done  chan struct{}
	bg    store.Calls // script calls left to finish after stop
}

func newWorker(t Target) *worker {
	return &worker{
		t:         t,
		announceQ: t.Announce,
		codec:     t.Codec,
		wakeCh:    make(chan struct{}, 1),
		pause:     newPause(),
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
	}
}

func (w *worker) wake() {
	select {
	case w.wakeCh <- struct{}{}:
	default:
	}
}

// stopWait bounds how long stop waits for a script call in flight.
const stopWait = time.Second

// stop ends the worker. A script call in flight finishes in the background
// (store.Await); stop waits for it for at most stopWait, so that a client
// closed right after finds no call of ours on its connections, yet stop
// returns promptly while Redis is unreachable.
func (w *worker) stop() {
	close(w.quit)
	<-w.done
	w.bg.Wait(stopWait)
}

// Backoff bounds after a failed run.
const (
	minBackoff = 50 * time.Millisecond
	maxBackoff = 5 * time.Second
)

// preciseWindow is how close to a due time the worker stops trusting the
// Go timer. An idle Go process waits for timers in epoll with millisecond
// timeouts, so a timer fires up to a millisecond late; the kernel's
// nanosleep is late by tens of microseconds. The worker
// sets its timer this much early and sleeps the rest with sleepPrecise,
// which holds a thread for at most this long and does not watch for wake-ups
// or stop (both wait at most this long).
const preciseWindow = 2 * time.Millisecond

func (w *worker) run() {
	defer close(w.done)
	ctx := context.Background()
	timer := time.NewTimer(0)
	defer timer.Stop()
	failures := 0
	for {
		next, _, err := w.drain(ctx)
		select {
		case <-w.quit:
			return
		default:
		}
		if err != nil {
			failures++
			wait := backoff(failures)
			next = time.Now().Add(wait)
			w.t.Telemetry.Transferred(ctx, time.Now(), 0, err)
			w.t.Logger.Warn("redelay: transfer failed; retrying",
				"queue", w.t.Queue.K.Name, "attempt", failures, "retry_in", wait, "err", err)
		} else {
			if failures > 0 {
				w.t.Logger.Info("redelay: transfer recovered", "queue", w.t.Queue.K.Name, "after_failures", failures)
				failures = 0
			}
			w.announce(ctx)
			w.checkServer(ctx)
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

// call runs one store call, giving up (and leaving it to finish in the
// background) when the worker stops.
func call[R any](ctx context.Context, w *worker, f func(context.Context) (R, error)) (R, error) {
	return store.Await(ctx, w.quit, &w.bg, f, nil)
}

// drain moves due items until a batch comes back short, reclaims expired
// leases, then returns when to run next: when the next item falls due or
// lease expires, at most the sweep interval away. again says that
// something is due within a millisecond of the server's clock (an item
// that arrived between two reads, more schedules than one run takes).
func (w *worker) drain(ctx context.Context) (next time.Time, again bool, err error) {
	start, moved := time.Now(), 0
	defer func() {
		if err == nil {
			w.t.Telemetry.Transferred(ctx, start, moved, nil)
		}
	}()
	q := w.t.Queue
	for {
		sent, read := time.Now(), w.pause.Read()
		res, err := call(ctx, w, func(ctx context.Context) (store.Moved, error) { return q.Transfer(ctx, w.t.BatchSize) })
		if err != nil {
			return time.Time{}, false, fmt.Errorf("transfer %s: %w", q.K.Name, err)
		}
		replied := time.Now()
		// The script read the server's clock (NowUs) about halfway
		// through the round trip: the next due time is that far from
		// there, not from the reply, which came half a round trip later.
		at := sent.Add(replied.Sub(sent) / 2)
		w.pause.Observed(read, res.Paused)
		moved += int(res.N)
		if res.N >= int64(w.t.BatchSize) {
			continue // a full batch: more may be due
		}
		wait := w.t.Sweep
		if res.NextDue >= 0 {
			// Due times are kept to the microsecond.
			wait = min(wait, time.Duration(res.NextDue-res.NowUs)*time.Microsecond)
		}
		if res.ScheduleDueMs >= 0 {
			nowMs := res.NowUs / 1000
			due := res.ScheduleDueMs
			if due <= nowMs {
				due = w.advanceSchedules(ctx, time.UnixMicro(res.NowUs))
			}
			// A schedule that could not be advanced is tried again on
			// the sweep, not in a loop.
			if due > nowMs && due-nowMs < wait.Milliseconds() {
				wait = time.Duration(due-nowMs) * time.Millisecond
			}
		}
		lease, err := w.reclaim(ctx)
		if err != nil {
			return time.Time{}, false, err
		}
		if lease >= 0 {
			wait = min(wait, lease)
		}
		// Due already (it arrived between two reads): go again after a
		// short pause.
		next := at.Add(wait)
		if soonest := replied.Add(100 * time.Microsecond); next.Before(soonest) {
			next = soonest
		}
		return next, wait <= time.Millisecond, nil
	}
}

// merge adds what a later registration of the queue wants announced.
func (w *worker) merge(t Target) {
	w.annMu.Lock()
	defer w.annMu.Unlock()
	if t.Announce && !w.announceQ {
		w.announceQ, w.announced = true, false
	}
	if t.Codec != "" && w.codec == "" {
		w.codec, w.announced = t.Codec, false
	}
}

// announce records the queue in the registry of queues, once per process
// (again when a later registration brings a codec); a failure is tried
// again after the next run.
func (w *worker) announce(ctx context.Context) {
	w.annMu.Lock()
	skip, codec := (w.announced && time.Since(w.announcedAt) < AnnounceEvery) || !w.announceQ, w.codec
	w.annMu.Unlock()
	if skip {
		return
	}
	_, err := call(ctx, w, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, w.t.Queue.Announce(ctx, codec, true)
	})
	if err == nil {
		w.annMu.Lock()
		w.announced, w.announcedAt = w.codec == codec, time.Now()
		w.annMu.Unlock()
	}
}

// checkServer reads the eviction policy of the queue's server, and warns
// of it, when a check is due (see Server): the first worker of the client
// to get there does it, in its own goroutine, after a successful run.
func (w *worker) checkServer(ctx context.Context) {
	if !w.srv.Claim() {
		return
	}
	_, _ = call(ctx, w, func(ctx context.Context) (struct{}, error) {
		ctx, cancel := context.WithTimeout(ctx, CheckTimeout)
		defer cancel()
		w.srv.Check(ctx, w.t.Queue.Client(), w.t.Logger)
		return struct{}{}, nil
	})
}

// backoff is capped exponential with full jitter.
func backoff(failures int) time.Duration {
	d := maxBackoff
	if failures < 20 {
		d = min(minBackoff<<failures, maxBackoff)
	}
	return d/2 + rand.N(d/2+1)
}
