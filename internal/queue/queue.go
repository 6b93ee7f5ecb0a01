// Package queue is THE queue, untyped: one Queue over n >= 1 partitions
// (parts), each an ordinary set of keys with its own transfer and
// reclaimer. A queue opened without partitions is a queue of one part:
// there is one code path. The typed packages (blocking, delayed) and the
// inspector are faces over it: they encode and decode values, hold
// options and docs, and call the methods here. Every Redis call goes
// through internal/store.
package queue

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/telemetry"
)

// Queue is one queue: its parts, and what waits on all of them at once.
type Queue struct {
	parts  []*part       // parts[0] is partition 0: it announces the queue and reports its gauges
	fan    *fanIn        // nil with one part: a wait blocks on the part itself
	rotate atomic.Uint32 // where the next probe of the parts starts
	// announced is when an offer of this process last announced the
	// queue (time.Now().UnixNano()); 0: not yet.
	announced atomic.Int64

	deadMu sync.Mutex
	dead   *Queue // created by the first DeadLetters call
}

// Of returns the untyped queue of a *blocking.Queue[T] (nil for anything
// else). Package blocking sets it when it is initialised, and nothing
// writes it afterwards: it is how package delayed reaches the queue it
// feeds without blocking exporting its machinery.
var Of func(q any) *Queue //nolint:gochecknoglobals // set once, by blocking's init

// Open validates its arguments and returns the queue; a problem is kept
// and returned by every call (see Err), so constructors never fail. Open
// makes no network call and starts nothing.
func Open(rdb redis.UniversalClient, name string, cfg Config, optErr error) *Queue {
	c := New(rdb, name, cfg, optErr)
	parts := []*part{c}
	if c.Err() == nil {
		for i := 1; i < c.Partitions(); i++ {
			parts = append(parts, c.Partition(i))
		}
	}
	return assemble(parts)
}

// assemble makes the queue of these parts: partition 0's gauges report
// the whole queue.
func assemble(parts []*part) *Queue {
	q := &Queue{parts: parts}
	if len(parts) > 1 {
		q.fan = newFanIn(parts)
		parts[0].gauges = q.reading // not started yet: nothing reads it
		if parts[0].Err() != nil {
			q.fan.cancel()
		}
	}
	return q
}

// Invalid returns a queue whose every call fails with ErrInvalidQueue and
// why.
func Invalid(why error) *Queue { return &Queue{parts: []*part{invalidPart(why)}} }

// Name is the queue's name.
func (q *Queue) Name() string { return q.parts[0].Name() }

// Clock is the time on the queue's server's clock as this process keeps
// it, without a call (see mover.Server.Now; Now asks the server): the
// faces' time checks read it.
func (q *Queue) Clock() time.Time { return q.parts[0].now() }

// Config is the queue's settings, defaults filled in.
func (q *Queue) Config() Config { return q.parts[0].Cfg }

// Telemetry records the queue's spans and metrics.
func (q *Queue) Telemetry() *telemetry.Recorder { return q.parts[0].Tel }

// Partitions is the number of partitions the queue was opened with.
func (q *Queue) Partitions() int { return len(q.parts) }

// Err is the construction error, or ErrClosed after Close.
func (q *Queue) Err() error { return q.parts[0].Err() }

// Closing is closed when the queue is closed.
func (q *Queue) Closing() <-chan struct{} { return q.parts[0].Closing() }

// route returns the part that holds the item with this ID.
func (q *Queue) route(id string) *part {
	if len(q.parts) == 1 {
		return q.parts[0]
	}
	return q.parts[keys.PartitionOf(id, len(q.parts))]
}

// each runs f on every part, all at once (a Cluster serves them on
// several masters), and returns their errors joined; with one part it
// runs f on the caller's goroutine.
func (q *Queue) each(f func(i int, p *part) error) error {
	if len(q.parts) == 1 {
		return f(0, q.parts[0])
	}
	errs := make([]error, len(q.parts))
	var wg sync.WaitGroup
	for i, p := range q.parts {
		wg.Go(func() { errs[i] = f(i, p) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// firstPart returns where a probe of the parts starts: the next part on
// each call, so that none is always probed last.
func (q *Queue) firstPart() int {
	if len(q.parts) == 1 {
		return 0
	}
	return int(q.rotate.Add(1) % uint32(len(q.parts)))
}

// Start makes sure this process works for the queue while it is open (see
// part.StartBackground): every consuming call starts with it.
func (q *Queue) Start(ctx context.Context) error {
	for _, p := range q.parts {
		if err := p.StartBackground(ctx); err != nil {
			return err
		}
	}
	return nil
}

// checkLayout makes sure this process agrees with Redis on the queue's
// number of partitions (one round trip on the first call, none after).
func (q *Queue) checkLayout(ctx context.Context) error {
	return q.parts[0].layout.check(ctx, &q.parts[0].bg)
}

// LayoutKnown tells the queue that its caller has just read its number of
// partitions from Redis and opened it with that number (the inspector):
// the check is skipped.
func (q *Queue) LayoutKnown() {
	if l := q.parts[0].layout; l != nil {
		l.done.Store(true)
	}
}

// Register adds transfer registrations of every part, owned by the caller
// (delayed.Queue holds its own, released by its Close).
func (q *Queue) Register() (func(), error) {
	var regs []interface{ Close() }
	closeAll := func() {
		for _, r := range regs {
			r.Close()
		}
	}
	for _, p := range q.parts {
		r, err := p.Register()
		if err != nil {
			closeAll()
			return nil, err
		}
		regs = append(regs, r)
	}
	return closeAll, nil
}

// Eviction returns the maxmemory-policy of the client's server, "" while
// unknown: read once per client (and again when the reading is older than
// mover.PolicyMaxAge) by the first caller that needs it, this one if
// none did yet.
func (q *Queue) Eviction(ctx context.Context) string {
	c := q.parts[0]
	if c.Store == nil {
		return ""
	}
	return c.srv.Eviction(ctx, c.Store.Client())
}

// DeadLetters returns the queue of items that failed for good: a queue
// like any other, over each part's dead-letter keys, that expires nothing.
// It is closed with q.
func (q *Queue) DeadLetters() *Queue {
	q.deadMu.Lock()
	defer q.deadMu.Unlock()
	if q.dead == nil {
		parts := make([]*part, len(q.parts))
		for i, p := range q.parts {
			parts[i] = p.Child("dead")
			if p.Err() != nil { // already closed: so is a queue opened from it
				_ = parts[i].Close()
			}
		}
		q.dead = assemble(parts)
	}
	return q.dead
}

// Close stops the background work of every part at once (each waits up to
// about a second for its calls in flight), then the fan-in's waiters, then
// the dead letters if they were opened. Idempotent.
func (q *Queue) Close() error {
	if q.fan != nil {
		q.fan.cancel()
	}
	err := q.each(func(_ int, p *part) error { return p.Close() })
	if q.fan != nil {
		q.fan.wg.Wait()
	}
	q.deadMu.Lock()
	dead := q.dead
	q.deadMu.Unlock()
	if dead != nil {
		_ = dead.Close()
	}
	return err
}

// perPart runs f on every part at once, after checking the queue and
// (with several parts) its layout, and returns each part's result; op
// names the call in the error of the layout check and of f ("" leaves
// them as they are).
func perPart[R any](ctx context.Context, q *Queue, op string, f func(p *part) (R, error)) ([]R, error) {
	if err := q.Err(); err != nil {
		return nil, err
	}
	wrap := func(err error) error {
		if op == "" || err == nil {
			return err
		}
		return fmt.Errorf("%s %s: %w", op, q.Name(), err)
	}
	if len(q.parts) > 1 {
		if err := q.checkLayout(ctx); err != nil {
			return nil, wrap(err)
		}
	}
	out := make([]R, len(q.parts))
	err := q.each(func(i int, p *part) (err error) {
		out[i], err = f(p)
		return err
	})
	return out, wrap(err)
}

// count adds up a count read from every part (see perPart for op).
func (q *Queue) count(ctx context.Context, op string, f func(ctx context.Context, p *part) (int64, error)) (int64, error) {
	counts, err := perPart(ctx, q, op, func(p *part) (int64, error) { return f(ctx, p) })
	var total int64
	for _, n := range counts {
		total += n
	}
	return total, err
}

// Paused reports whether this process sees the queue paused (see
// part.Paused).
func (q *Queue) Paused(ctx context.Context) (bool, error) { return q.parts[0].Paused(ctx) }
