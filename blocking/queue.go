package blocking

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/queue"
)

// Queue is a typed, Redis-backed FIFO queue of T. It is safe for concurrent
// use by many goroutines and by many processes sharing the Redis server.
type Queue[T any] struct {
	q *queue.Queue

	deadMu sync.Mutex
	dead   *Queue[T] // created by the first DeadLetters call
}

func init() {
	queue.Of = func(q any) *queue.Queue {
		if x, ok := q.(interface{ untyped() *queue.Queue }); ok {
			return x.untyped()
		}
		return nil
	}
}

func (q *Queue[T]) untyped() *queue.Queue { return q.q }

// New returns the queue called name on rdb: a *redis.Client, a
// *redis.ClusterClient, or a failover (Sentinel) client. A *redis.Ring is
// refused: it moves keys between shards when one is unreachable.
//
// New never fails and starts nothing: a nil client, a bad name or a bad
// option makes every call return an error wrapping [ErrInvalidQueue] that
// names the problem. The first Take, Poll, Receive or Consume starts this
// process's background work for the queue (moving its due delayed items,
// reclaiming expired leases, reporting its depth), which runs until
// [Queue.Close]. A queue used only to offer needs no Close.
func New[T any](rdb redis.UniversalClient, name string, opts ...Option) *Queue[T] {
	o := options{cfg: queue.Config{Codec: codec.Msgpack()}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return &Queue[T]{q: queue.Open(rdb, name, o.cfg, o.err)}
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.q.Name() }

// OfferOption configures one [Queue.Offer].
type OfferOption func(*offerOptions)

type offerOptions struct{ r queue.OfferRequest }

// WithID gives the item an ID of the caller's choosing (1 to 256 bytes),
// seen by consumers as Delivery.ID. The ready list does not check IDs for
// duplicates: for that, offer through a delayed.Queue with delayed.WithID.
// Default: a random 16-character ID.
func WithID(id string) OfferOption {
	return func(o *offerOptions) { o.r.ID, o.r.HasID = id, true }
}

// MaxPriority is the highest priority of WithPriority.
const MaxPriority = 9

// WithPriority gives the item a priority from 0 (the default) to
// [MaxPriority]: among ready items, Take, Receive and Consume hand out the
// highest priority first, and items of equal priority in the order they
// became ready. The order is strict: while items of a higher priority are
// ready, lower ones wait (see docs/decisions.md, "Priorities"). An item
// keeps its priority through Nack, retries, expired leases and redrives.
// Consume leases up to twice its concurrency ahead of its handlers: an
// item of priority that arrives meanwhile is handled after those.
// A priority outside 0..MaxPriority returns [ErrInvalidArgument].
//
// A queue whose items all have priority 0 works as if priorities did not
// exist, at the same cost.
func WithPriority(p int) OfferOption {
	return func(o *offerOptions) { o.r.Priority = p }
}

// WithTTL gives the item a time to live: not delivered within d of
// becoming due (for an item offered here, of the offer), it is dropped into
// the dead letters with the error "expired" instead of being delivered, and
// counted in the redelay.expired metric. The deadline is fixed when the
// item is offered (Redis server clock): retries after a Nack do not move it.
// Receive and Consume check it in Redis, as they lease; Take checks it as
// it returns the item, on this machine's clock. The deadline ends when the
// item is dead-lettered, for whatever reason: [Queue.DeadLetters] delivers
// it like any other, and [Queue.Redrive] and [Queue.RedriveID] make it
// ready anew. Default: none; 1 ms to 10 years, else [ErrInvalidArgument].
func WithTTL(d time.Duration) OfferOption {
	return func(o *offerOptions) { o.r.TTL = d }
}

// WithHeaders attaches metadata to the item, seen by consumers in
// Delivery.Headers. Names starting with "redelay-" are reserved (an Offer
// with one returns [ErrInvalidArgument]); the trace context's headers
// (traceparent, tracestate, baggage) are set by the propagator when one is
// active. At most 64 headers; their bytes count toward the max payload
// size. The map is not retained.
func WithHeaders(h map[string]string) OfferOption {
	return func(o *offerOptions) { o.r.Headers = h }
}

// MaxIDLen bounds an ID given with WithID, in bytes.
const MaxIDLen = queue.MaxIDLen

// Offer appends v to the queue, ready to take now, and returns its ID.
//
// Offer is idempotent on resend: when go-redis sends the call again after
// a lost reply, the item is stored once. A nil error means stored. An
// error returned with the ID means the offer was sent but its outcome did
// not come back (ctx ended meanwhile, wrapped in the error, or the reply
// was lost): the item may have been stored, once. With [WithReplicaAck],
// an error wrapping [ErrNotReplicated] also comes with the ID: the item
// is stored on the master, and replicas did not confirm it in time. An
// error without an ID means it was not stored: among them
// [ErrOutOfMemory], Redis's refusal of a write past its maxmemory.
func (q *Queue[T]) Offer(ctx context.Context, v T, opts ...OfferOption) (string, error) {
	var o offerOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return q.q.Offer(ctx, v, queue.Now(), o.r)
}

// Take removes and returns the oldest ready item, waiting as long as ctx
// allows for one to arrive. When ctx ends it returns ctx.Err() (test with
// errors.Is), and ErrClosed when the queue is closed meanwhile, both within
// a few milliseconds, even while the network is stalled.
//
// Delivery is at most once: an item is removed as it is returned, and an
// item taken by a process that then crashes is gone. An item popped while a
// Take waited, and then not returned (its ctx ended, the queue closed, or
// the reply was lost with the connection), goes back to the head of the
// queue. The one case that loses an item is a connection lost while a
// non-blocking pop is in flight (Take pops without blocking while items
// are ready): its reply, and the item, are gone. Use Receive for work that
// must not be lost.
//
// An item that is no envelope at all goes to the dead letters; an item
// that cannot be decoded (a value of another type, or an envelope version
// this release does not read) is put back for a later retry, counted as a
// failed attempt, and dead-lettered after WithMaxAttempts.
func (q *Queue[T]) Take(ctx context.Context) (T, error) {
	v, _, err := q.take(ctx, time.Time{})
	return v, err
}

// Poll is Take with a time limit: ok is false, with a nil error, when
// timeout passes with nothing ready. A zero timeout takes a ready item
// without waiting. A negative timeout returns [ErrInvalidArgument].
func (q *Queue[T]) Poll(ctx context.Context, timeout time.Duration) (v T, ok bool, err error) {
	if timeout < 0 {
		return v, false, fmt.Errorf("poll %s: negative timeout %v: %w", q.Name(), timeout, ErrInvalidArgument)
	}
	return q.take(ctx, time.Now().Add(timeout))
}

func (q *Queue[T]) take(ctx context.Context, deadline time.Time) (v T, ok bool, err error) {
	ok, err = q.q.Take(ctx, queue.TakeRequest{Max: 1, Deadline: deadline}, func(_ string, payload []byte) error {
		var x T // a fresh value: a codec may merge into a used one
		if err := queue.Unmarshal(q.q.Config().Codec, payload, &x); err != nil {
			return err
		}
		v = x
		return nil
	})
	return v, ok, err
}

// Size returns the number of items ready to take.
func (q *Queue[T]) Size(ctx context.Context) (int64, error) { return q.q.Size(ctx) }

// Close stops the background work this queue (and its DeadLetters queue)
// started in this process: the transfer of due items and the reclaiming of
// expired leases. Blocked Take, Poll, Receive and Consume calls return
// [ErrClosed] at once; an item they had just popped goes back to the
// queue. Items stay in Redis, leased ones included: they come back after
// their visibility timeout. Close returns within about a second, even
// while Redis is unreachable. Calls after Close return ErrClosed; closing
// twice is harmless.
func (q *Queue[T]) Close() error { return q.q.Close() }
