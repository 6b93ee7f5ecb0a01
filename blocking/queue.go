package blocking

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// Queue is a typed, Redis-backed FIFO queue of T. It is safe for concurrent
// use by many goroutines and by many processes sharing the Redis server.
type Queue[T any] struct {
	core *queue.Core // partition 0's when partitioned

	// parts are the partitions of a queue opened WithPartitions(n > 1):
	// ordinary queues over each partition's keys (parts[0].core is core);
	// nil for a queue of one partition. fan hands them items to waiting
	// callers (partition.go).
	parts []*Queue[T]
	fan   *fanIn[T]

	deadMu sync.Mutex
	dead   *Queue[T] // created by the first DeadLetters call
}

func init() {
	queue.CoreOf = func(q any) *queue.Core {
		if x, ok := q.(interface{ queueCore() *queue.Core }); ok {
			return x.queueCore()
		}
		return nil
	}
	queue.PartsOf = func(q any) []*queue.Core {
		if x, ok := q.(interface{ partCores() []*queue.Core }); ok {
			return x.partCores()
		}
		return nil
	}
}

func (q *Queue[T]) queueCore() *queue.Core { return q.core }

func (q *Queue[T]) partCores() []*queue.Core {
	if q.parts == nil {
		return nil
	}
	cores := make([]*queue.Core, len(q.parts))
	for i, p := range q.parts {
		cores[i] = p.core
	}
	return cores
}

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
	q := &Queue[T]{core: queue.New(rdb, name, o.cfg, o.err)}
	if o.cfg.Partitions > 1 && q.core.Err() == nil {
		q.partition()
	}
	return q
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.core.Name() }

// OfferOption configures one [Queue.Offer].
type OfferOption func(*offerOptions)

type offerOptions struct {
	id       string
	hasID    bool
	headers  map[string]string
	priority int
	ttl      time.Duration
}

// WithID gives the item an ID of the caller's choosing (1 to 256 bytes),
// seen by consumers as Delivery.ID. The ready list does not check IDs for
// duplicates: for that, offer through a delayed.Queue with delayed.WithID.
// Default: a random 16-character ID.
func WithID(id string) OfferOption {
	return func(o *offerOptions) { o.id, o.hasID = id, true }
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
	return func(o *offerOptions) { o.priority = p }
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
	return func(o *offerOptions) { o.ttl = d }
}

// WithHeaders attaches metadata to the item, seen by consumers in
// Delivery.Headers. Names starting with "redelay-" are reserved (an Offer
// with one returns [ErrInvalidArgument]); the trace context's headers
// (traceparent, tracestate, baggage) are set by the propagator when one is
// active. At most 64 headers; their bytes count toward the max payload
// size. The map is not retained.
func WithHeaders(h map[string]string) OfferOption {
	return func(o *offerOptions) { o.headers = h }
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
	if err := q.core.Err(); err != nil {
		return "", err
	}
	var o offerOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	id, err := queue.OfferID(o.id, o.hasID, o.headers)
	if err == nil {
		err = queue.CheckPriority(o.priority)
	}
	if err == nil {
		err = queue.CheckTTL(o.ttl)
	}
	if err != nil {
		return "", fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	ctx, op, trace := q.core.Tel.StartSend(ctx, id, 0)
	err = q.route(id).offer(ctx, id, v, &o, trace)
	q.core.Tel.Sent(ctx, op, 1, err)
	return queue.OfferResult(id, err)
}

func (q *Queue[T]) offer(ctx context.Context, id string, v T, o *offerOptions, trace map[string]string) error {
	env, err := q.core.Encode(id, v, o.headers, trace, o.priority, o.ttl)
	if err != nil {
		return fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	if _, err := q.core.Offer(ctx, store.OfferItem{ID: id, Env: env, Mode: 'r'}); err != nil {
		return fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	return nil
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

func (q *Queue[T]) take(ctx context.Context, deadline time.Time) (T, bool, error) {
	if q.parts != nil {
		return q.takeParts(ctx, deadline)
	}
	var zero T
	if err := q.core.StartBackground(ctx); err != nil {
		return zero, false, err
	}
	start := time.Now()
	pop := true // try a non-blocking pop first, and again after each item
	for {
		if err := q.awaitRunning(ctx, deadline); err != nil {
			if errors.Is(err, errPollTimeout) {
				return zero, false, nil
			}
			return zero, false, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		var raw []byte
		var err error
		if pop {
			raw, err = q.pop(ctx)
		}
		if err == nil && raw == nil {
			pop = false
			raw, err = q.wait(ctx, deadline)
			if err == nil && raw == nil && !deadline.IsZero() && !time.Now().Before(deadline) {
				return zero, false, nil
			}
		}
		if err != nil {
			return zero, false, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		if raw == nil {
			continue
		}
		pop = true
		if v, msg, ok := q.taken(ctx, raw); ok {
			q.core.Tel.Received(ctx, start, msg)
			return v, true, nil
		}
	}
}

// taken decodes an item a Take popped: false, when it cannot be returned,
// after dealing with it (an item past its TTL goes to the dead letters,
// one that cannot be decoded is failed: see failTaken). It counts the item
// consumed, and returns what the span of the Take needs of it.
func (q *Queue[T]) taken(ctx context.Context, raw []byte) (T, telemetry.Msg, bool) {
	v, e, err := q.decode(raw)
	switch {
	case err != nil:
		q.failTaken(ctx, raw, err)
		return v, telemetry.Msg{}, false
	case q.core.Deadlines() && queue.Expired(e, time.Now()):
		q.expireTaken(ctx, raw, e.ID)
		return v, telemetry.Msg{}, false
	}
	q.core.Tel.Consumed(ctx, e.DueAt)
	return v, telemetry.Msg{ID: e.ID, Attempt: e.Attempt + 1, Due: e.DueAt, Headers: e.Headers}, true
}

// errPollTimeout: a Poll's timeout passed while the queue was paused.
var errPollTimeout = errors.New("poll timeout")

// awaitRunning waits while the queue is paused, until deadline (not zero:
// errPollTimeout).
func (q *Queue[T]) awaitRunning(ctx context.Context, deadline time.Time) error {
	// The first read of the flag is not bound by a Poll's timeout (a
	// zero timeout would never see it).
	if paused, err := q.core.Paused(ctx); err != nil || !paused {
		return err
	}
	if deadline.IsZero() {
		return q.core.AwaitRunning(ctx)
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := q.core.AwaitRunning(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return errPollTimeout
	}
	return err
}

// pop takes a ready item without blocking (nil when none).
func (q *Queue[T]) pop(ctx context.Context) ([]byte, error) {
	return queue.Wait(ctx, q.core, q.core.Store.Pop, func(raw []byte, err error) {
		if err == nil && raw != nil {
			q.giveBack(raw)
		}
	})
}

// wait blocks (one block at most) until an item is ready, claims it and
// takes it: nil when the block or the deadline passed first.
func (q *Queue[T]) wait(ctx context.Context, deadline time.Time) ([]byte, error) {
	wctx := ctx
	if !deadline.IsZero() {
		if time.Until(deadline) <= 0 {
			return nil, nil
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	block := q.core.Store.Client().Block(wctx)
	claimed := time.Now()
	raw, err := queue.Wait(wctx, q.core, func(ctx context.Context) ([]byte, error) {
		return q.core.Store.WaitClaim(ctx, block)
	}, q.unclaimLate)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil { // the Poll deadline
			return nil, nil
		}
		return nil, err
	}
	if raw == nil {
		return nil, nil
	}
	return q.finishClaim(ctx, raw, claimed)
}

// finishClaim takes an item a wait claimed at claimed (nil when it went
// back: the queue was paused meanwhile, or the reclaimer gave it back).
func (q *Queue[T]) finishClaim(ctx context.Context, raw []byte, claimed time.Time) ([]byte, error) {
	if paused, _ := q.core.Paused(ctx); paused {
		// Paused while this wait was blocked: the item goes back first in
		// line, and take waits for Resume.
		q.unclaimLate(raw, nil)
		return nil, nil
	}
	if store.IsMarker(raw) {
		// Woken for an item of the priority set: take the next item, as a
		// non-blocking pop does (the marker leaves the claimed list).
		return queue.Wait(ctx, q.core, q.core.Store.TakeMarked, func(raw []byte, err error) {
			if err == nil && raw != nil {
				q.giveBack(raw)
			}
		})
	}
	taken, err := queue.Call(context.WithoutCancel(ctx), q.core, func(ctx context.Context) (bool, error) {
		return q.core.Store.Confirm(ctx, raw)
	}, nil)
	if err != nil {
		// Did the LREM run? Giving the item back tells: if it is still
		// claimed, it goes back to the queue; if not, this Take took it.
		back, uerr := queue.Call(context.WithoutCancel(ctx), q.core, func(ctx context.Context) (bool, error) {
			return q.core.Store.Unclaim(ctx, raw)
		}, nil)
		if uerr != nil || back {
			return nil, err // given back, or still claimed: the reclaimer gives it back
		}
		taken = false
	}
	if !taken {
		// Not in the claimed list: either an earlier send of this very
		// Confirm took it (go-redis resent it after a lost reply), or the
		// reclaimer gave it back, which it does only after the item sat
		// there for store.ClaimedHold.
		if time.Since(claimed) < store.ClaimedHold/2 {
			return raw, nil
		}
		q.core.Cfg.Logger.Warn("redelay: a claimed item was given back before Take could take it; it stays in the queue",
			"queue", q.Name(), "waited", time.Since(claimed))
		return nil, nil
	}
	return raw, nil
}

// unclaimLate gives back an item a wait claimed after its caller left.
func (q *Queue[T]) unclaimLate(raw []byte, err error) {
	if err != nil || raw == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.core.Store.Unclaim(ctx, raw); err != nil {
		q.core.Cfg.Logger.Warn("redelay: could not give back an item claimed after its caller left; the reclaimer will",
			"queue", q.Name(), "err", err)
	}
}

// giveBack puts an item popped after its caller left back at the head.
func (q *Queue[T]) giveBack(raw []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := q.core.Store.PushBack(ctx, raw); err != nil {
		id, _ := envelope.PeekID(raw)
		q.core.Cfg.Logger.Error("redelay: an item popped after its caller left could not be put back and is lost",
			"queue", q.Name(), "id", id, "err", err)
	}
}

func (q *Queue[T]) decode(raw []byte) (T, envelope.Envelope, error) {
	return queue.DecodeValue[T](q.core, raw)
}

// expireTaken moves an item Take popped past its deadline (WithTTL) to the
// dead letters, with the error "expired" and without its deadline.
func (q *Queue[T]) expireTaken(ctx context.Context, raw []byte, id string) {
	ctx = context.WithoutCancel(ctx)
	withErr, _ := envelope.WithError(envelope.WithoutDeadline(raw), "expired")
	dead := envelope.WithAttempt(withErr, 0)
	if _, err := queue.Call(ctx, q.core, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, q.core.Store.DeadLetter(ctx, dead)
	}, nil); err != nil {
		q.core.Cfg.Logger.Error("redelay: an item past its TTL could not be dead-lettered and is dropped",
			"queue", q.Name(), "id", id, "err", err)
		return
	}
	q.core.Tel.Expired(ctx, 1)
	q.core.Cfg.Logger.Debug("redelay: item past its TTL moved to the dead letters", "queue", q.Name(), "id", id)
}

// failTaken deals with an item Take popped but cannot return: bytes that
// are no envelope go to the dead letters as they are; an envelope that
// cannot be decoded is scheduled again, its failure counted, with the
// reason in its headers (dead-lettered past the max attempts).
func (q *Queue[T]) failTaken(ctx context.Context, raw []byte, reason error) {
	ctx = context.WithoutCancel(ctx)
	log := q.core.Cfg.Logger.With("queue", q.Name(), "reason", reason.Error(), "bytes", len(raw))
	if !envelope.IsEnvelope(raw) {
		if _, err := queue.Call(ctx, q.core, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, q.core.Store.DeadLetter(ctx, raw)
		}, nil); err != nil {
			log.Error("redelay: bytes that are no envelope could not be dead-lettered and are dropped", "err", err)
			return
		}
		q.core.Tel.DeadLettered(ctx, 1)
		log.Warn("redelay: bytes that are no envelope moved to the dead letters")
		return
	}
	attempt := envelope.Attempt(raw) + 1
	id, _ := envelope.PeekID(raw)
	status, maxAttempts, err := q.settle(ctx, store.Settle{
		Env: raw, Reason: reason.Error(), Attempt: attempt, Delay: DefaultBackoff(attempt), Nonce: queue.NewToken(),
	})
	log = log.With("id", id, "attempt", attempt)
	switch {
	case err != nil && !errors.Is(err, ErrNotReplicated):
		log.Error("redelay: an item that could not be decoded could not be put back and is lost", "err", err)
	case status == settleDead:
		q.core.Tel.DeadLettered(ctx, 1)
		log.Warn("redelay: an item that could not be decoded was dead-lettered after its last attempt", "max_attempts", maxAttempts)
	default:
		log.Warn("redelay: an item that could not be decoded will be retried (is this consumer older than its producers, or of another type?)")
	}
}

// Size returns the number of items ready to take.
func (q *Queue[T]) Size(ctx context.Context) (int64, error) {
	if err := q.core.Err(); err != nil {
		return 0, err
	}
	if q.parts != nil {
		return sumParts(ctx, q, "size", (*Queue[T]).Size)
	}
	n, err := queue.Call(ctx, q.core, q.core.Store.ReadyLen, nil)
	if err != nil {
		return 0, fmt.Errorf("size %s: %w", q.Name(), err)
	}
	return n, nil
}

// Close stops the background work this queue (and its DeadLetters queue)
// started in this process: the transfer of due items and the reclaiming of
// expired leases. Blocked Take, Poll, Receive and Consume calls return
// [ErrClosed] at once; an item they had just popped goes back to the
// queue. Items stay in Redis, leased ones included: they come back after
// their visibility timeout. Close returns within about a second, even
// while Redis is unreachable. Calls after Close return ErrClosed; closing
// twice is harmless.
func (q *Queue[T]) Close() error {
	if q.parts != nil {
		return q.closeParts()
	}
	err := q.core.Close()
	q.deadMu.Lock()
	dead := q.dead
	q.deadMu.Unlock()
	if dead != nil {
		_ = dead.Close() // and its own dead letters, if anyone opened them
	}
	return err
}
