// Package redelaytest runs code that uses redelay's queues in tests, with
// no Redis server and no waiting: an [Env] is an embedded Redis
// (miniredis) with a clock the test moves.
//
//	env := redelaytest.New(t)
//	q := blocking.New[Order](env.Client(), "orders")
//	t.Cleanup(func() { _ = q.Close() })
//	dq := delayed.New(q)
//	t.Cleanup(func() { _ = dq.Close() })
//	_, _ = dq.Offer(ctx, order, 30*time.Minute)
//	env.Advance(30 * time.Minute) // the order is ready now
//
// The clock stands still between calls to [Env.Advance]: an item due in
// 30 minutes stays pending for as long as the test takes, and is ready
// as soon as the test advances the clock by 30 minutes. Advance makes
// what fell due in between happen before it returns: delayed items and
// retries become ready, in due order; leases that ran out are reclaimed
// (a late Ack returns blocking.ErrLeaseLost; an item out of attempts is
// dead-lettered); items whose TTL ran out are never handed out; schedules
// fire their ticks. A jump over several ticks of a schedule is as if no
// process ran in between: the schedule's missed-tick policy says which
// fire (delayed.WithMissedTicks).
//
// Every time check of the queues opened on [Env.Client] follows the
// clock, whether Redis makes it (the scripts read the server's TIME) or
// the queue does (a lease surely held, a TTL at Take, a due time in the
// past). What consumers then do with what became ready (a handler of
// Consume, a blocked Take) happens in their own goroutines, after
// Advance returns: [Env.WaitIdle] waits until they have taken and settled
// it, before the test moves the clock again.
// Waits measured in real time stay real: Poll's timeout, a handler's
// timeout, Consume's rate limit.
//
// Queues, transfers (transfer.Run), Consume and the inspector (package
// inspect) work on the client as on any Redis. Close every queue before
// the test ends (t.Cleanup), as in production code; the Env closes its
// client and server when the test ends.
package redelaytest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/queue"
)

// waitBlock is how long a consumer's wait blocks in the embedded Redis at
// a time: a queue closed while it waits (after Consume returns) waits at
// most this long for the wait to end.
const waitBlock = 25 * time.Millisecond

// StepTimeout bounds how long one Advance waits for what fell due to
// happen.
const StepTimeout = 10 * time.Second

// Env is an embedded Redis with a clock a test moves, and a client of it.
// Its methods are safe for concurrent use; Advance calls run one at a
// time.
type Env struct {
	t   testing.TB // New's; nil for Start
	mr  *miniredis.Miniredis
	rdb *redis.Client
	now atomic.Pointer[time.Time]

	advance sync.Mutex // one Advance at a time
	close   sync.Once
	err     error // Close's
}

// Option configures an Env.
type Option func(*options)

type options struct {
	start time.Time
}

// WithTime sets the clock's first reading (default: the current time, to
// the microsecond). Its location is kept: Now returns times in it.
func WithTime(t time.Time) Option {
	return func(o *options) { o.start = t }
}

// New starts an Env for the test t and closes it when the test and its
// subtests end (t.Cleanup). It fails the test when the embedded server
// cannot start.
func New(t testing.TB, opts ...Option) *Env {
	t.Helper()
	e, err := Start(opts...)
	if err != nil {
		t.Fatalf("redelaytest: %v", err)
	}
	e.t = t
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// Start starts an Env that the caller closes (Close): for a TestMain, or
// an Example, where no *testing.T is at hand. In a test, New does both.
func Start(opts ...Option) (*Env, error) {
	o := options{start: time.Now().Truncate(time.Microsecond)}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.start.IsZero() {
		return nil, fmt.Errorf("redelaytest: WithTime(zero time): %w", queue.ErrInvalidArgument)
	}
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return nil, fmt.Errorf("redelaytest: start the embedded Redis: %w", err)
	}
	e := &Env{mr: mr}
	e.set(o.start.Round(0)) // no monotonic reading: the clock is a wall clock
	e.rdb = redis.NewClient(&redis.Options{Addr: mr.Addr()})
	srv := mover.ServerOf(e.rdb)
	srv.SetClock(e.Now)
	srv.LimitBlock(waitBlock)
	return e, nil
}

func (e *Env) set(t time.Time) {
	e.now.Store(&t)
	e.mr.SetTime(t)
}

// Client returns the client of the embedded Redis (the same one on every
// call); queues opened on it follow the Env's clock. The Env closes it.
func (e *Env) Client() *redis.Client { return e.rdb }

// Addr is the embedded Redis's address, for a tool that opens a client of
// its own (the CLI, another language's producer). Queues a process opens
// on another client read the real clock for the checks they make
// themselves, and Advance does not run their transfers.
func (e *Env) Addr() string { return e.mr.Addr() }

// Now is the clock's reading: the Redis server's TIME, and the time the
// queues check against.
func (e *Env) Now() time.Time { return *e.now.Load() }

// Advance moves the clock forward by d and, before it returns, makes
// what fell due in between happen: the transfers of the queues opened on
// Client move due items to their ready lists (in due order), reclaim the
// leases that ran out and fire due schedule ticks; keys with a Redis TTL
// age by d. Advance(0) does the same without moving the clock. A negative
// d, or one that takes the clock past the latest due time a queue holds
// (the year 2255), is refused with an error that wraps
// blocking.ErrInvalidArgument.
//
// In an Env of New, a failure fails the test (t.Fatalf: call Advance from
// the test's goroutine); in an Env of Start, it is returned.
func (e *Env) Advance(d time.Duration) error {
	if e.t != nil {
		e.t.Helper()
	}
	e.advance.Lock()
	defer e.advance.Unlock()
	if d < 0 {
		return e.fail(fmt.Errorf("redelaytest: advance by %v: the clock only moves forward: %w", d, queue.ErrInvalidArgument))
	}
	to := e.Now().Add(d) // time.Time.Add saturates: no overflow
	if to.After(queue.MaxDue) {
		return e.fail(fmt.Errorf("redelaytest: advance by %v: past the latest time a queue holds (%v): %w",
			d, queue.MaxDue.UTC().Format(time.DateOnly), queue.ErrInvalidArgument))
	}
	e.set(to)
	e.mr.FastForward(d)
	ctx, cancel := context.WithTimeout(context.Background(), StepTimeout)
	defer cancel()
	if err := mover.Step(ctx, e.rdb); err != nil {
		return e.fail(fmt.Errorf("redelaytest: after advancing by %v: %w", d, err))
	}
	return nil
}

// AdvanceTo moves the clock forward to t, as Advance(t.Sub(Now())); a t
// before Now is refused (blocking.ErrInvalidArgument).
func (e *Env) AdvanceTo(t time.Time) error {
	if e.t != nil {
		e.t.Helper()
	}
	return e.Advance(t.Sub(e.Now()))
}

// StatsReader is what WaitIdle watches: a blocking.Queue[T] of any T.
type StatsReader interface {
	Stats(ctx context.Context) (blocking.Stats, error)
}

// idlePoll is how often WaitIdle reads the queue's counts.
const idlePoll = time.Millisecond

// WaitIdle waits until q has nothing ready and nothing in flight: its
// consumers took what Advance made ready, and every delivery they
// received was acked, nacked (its retry waits for a later Advance) or
// dead-lettered. It is how a test waits for Consume's handlers before it
// advances the clock again. It reads the queue's counts every
// millisecond of real time, and returns ctx's error when ctx ends first
// (a queue nobody consumes, or one that is paused, never gets idle).
func (e *Env) WaitIdle(ctx context.Context, q StatsReader) error {
	t := time.NewTicker(idlePoll)
	defer t.Stop()
	for {
		st, err := q.Stats(ctx)
		if err != nil {
			return fmt.Errorf("redelaytest: wait for the queue to be idle: %w", err)
		}
		if st.Ready == 0 && st.Inflight == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redelaytest: wait for the queue to be idle (%d ready, %d in flight): %w", st.Ready, st.Inflight, ctx.Err())
		case <-t.C:
		}
	}
}

func (e *Env) fail(err error) error {
	if e.t != nil {
		e.t.Helper()
		e.t.Fatal(err)
	}
	return err
}

// Close closes the client and the embedded server; queues still open on
// the client fail from then on. Closing twice is harmless.
func (e *Env) Close() error {
	e.close.Do(func() {
		err := e.rdb.Close()
		e.mr.Close()
		if err != nil && !errors.Is(err, redis.ErrClosed) {
			e.err = fmt.Errorf("redelaytest: close the client: %w", err)
		}
	})
	return e.err
}
