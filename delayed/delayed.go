package delayed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/transfer"
)

// Sentinel errors.
var (
	// ErrDuplicate: an item with the ID given by WithID is still pending.
	ErrDuplicate = errors.New("redelay: duplicate id")
	// ErrInvalidArgument is blocking.ErrInvalidArgument: a negative or
	// out-of-range delay or time, a bad ID or header.
	ErrInvalidArgument = blocking.ErrInvalidArgument
	// ErrInvalidQueue is blocking.ErrInvalidQueue.
	ErrInvalidQueue = blocking.ErrInvalidQueue
	// ErrClosed is blocking.ErrClosed; a delayed queue returns it after its own Close.
	ErrClosed = blocking.ErrClosed
)

// MaxIDLen bounds an ID given with WithID, in bytes.
const MaxIDLen = blocking.MaxIDLen

// Queue holds items until they fall due, then hands them to its blocking
// queue. It is safe for concurrent use; concurrent Offer and OfferAt calls
// share script calls (each still gets its own outcome), which makes many
// producers cheaper for Redis than the same offers one call each.
type Queue[T any] struct {
	core *queue.Core

	mu     sync.Mutex
	reg    *transfer.Registration
	closed bool
}

// Option configures a delayed queue at [New].
type Option func(*newOptions)

type newOptions struct {
	noTransfer bool
}

// WithoutTransfer makes a producer-only delayed queue: this process offers
// and cancels, but does not move due items. Some other process must: every
// process that takes from or receives on the blocking queue transfers it,
// and so does transfer.Run. Useful for short-lived producers (a CLI, a
// request handler in a serverless function). Default: the delayed queue
// transfers.
func WithoutTransfer() Option {
	return func(o *newOptions) { o.noTransfer = true }
}

// New returns the delayed queue feeding q: items offered here become ready
// in q, in due order, when their time comes. Unless [WithoutTransfer] is
// given, New starts this process's transfer for q's due items at once (no
// network call: it subscribes in the background); it runs until Close.
// New never fails: a problem with q is returned by every call.
func New[T any](q *blocking.Queue[T], opts ...Option) *Queue[T] {
	var core *queue.Core
	if q != nil && queue.CoreOf != nil {
		core = queue.CoreOf(q)
	}
	if core == nil {
		return &Queue[T]{core: queue.Invalid(errors.New("delayed.New(nil): nil blocking queue"))}
	}
	var o newOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	d := &Queue[T]{core: core}
	if !o.noTransfer && core.Err() == nil {
		r, err := core.Register()
		if err != nil {
			return &Queue[T]{core: queue.Invalid(err)}
		}
		d.reg = r
	}
	return d
}

// OfferOption configures one Offer, OfferAt or OfferBatch.
type OfferOption func(*offerOptions)

type offerOptions struct {
	id      string
	hasID   bool
	headers map[string]string
}

// WithID gives the item an ID of the caller's choosing (1 to 256 bytes),
// such as an order number, to cancel it later with Remove. While an item
// with that ID is pending, offering another returns [ErrDuplicate] and keeps
// the first. Default: a random 16-character ID. Not for OfferBatch, which
// generates every ID.
func WithID(id string) OfferOption {
	return func(o *offerOptions) { o.id, o.hasID = id, true }
}

// WithHeaders attaches metadata to the item, seen by consumers in
// Delivery.Headers; see blocking.WithHeaders for the rules.
func WithHeaders(h map[string]string) OfferOption {
	return func(o *offerOptions) { o.headers = h }
}

func (o *offerOptions) apply(opts []OfferOption) {
	for _, opt := range opts {
		if opt != nil {
			opt(o)
		}
	}
}

// Offer adds v, due delay from now by the Redis server's clock, and returns
// its ID. A zero delay makes it ready at once (after any item already due).
//
// Offer is idempotent on resend: when go-redis sends the call again after a
// lost reply, the item is stored once, and a WithID offer does not find
// itself a duplicate. A nil error means stored. An error returned with the
// ID means the offer was sent but its outcome did not come back (ctx ended
// meanwhile, wrapped in the error, or the reply was lost): the item may
// have been stored, once (a later Offer with the same WithID tells:
// ErrDuplicate while it is pending). An error without an ID means it was
// not stored.
func (d *Queue[T]) Offer(ctx context.Context, v T, delay time.Duration, opts ...OfferOption) (string, error) {
	if err := queue.CheckDelay("delay", delay); err != nil {
		return "", fmt.Errorf("offer %s: %w", d.core.Name(), err)
	}
	return d.offer(ctx, v, 'd', delay.Microseconds(), delay, opts)
}

// OfferAt adds v, due at the given time (compared with the Redis server's
// clock), and returns its ID. A time in the past makes it ready at once.
// Times before 1970 or after 2255 return [ErrInvalidArgument].
func (d *Queue[T]) OfferAt(ctx context.Context, v T, due time.Time, opts ...OfferOption) (string, error) {
	if err := queue.CheckDue(due); err != nil {
		return "", fmt.Errorf("offer %s: %w", d.core.Name(), err)
	}
	return d.offer(ctx, v, 'a', due.UnixMicro(), time.Until(due), opts)
}

// offer sends one item; us is the delay (mode 'd') or the due time (mode
// 'a') in microseconds.
func (d *Queue[T]) offer(ctx context.Context, v T, mode byte, us int64, delay time.Duration, opts []OfferOption) (string, error) {
	if err := d.err(); err != nil {
		return "", err
	}
	var o offerOptions
	o.apply(opts)
	id, err := queue.OfferID(o.id, o.hasID, o.headers)
	if err != nil {
		return "", fmt.Errorf("offer %s: %w", d.core.Name(), err)
	}
	ctx, span, trace := d.core.Tel.StartSend(ctx, id, max(delay, 0))
	err = d.send(ctx, id, v, mode, us, o.headers, trace)
	sent := 1
	if err != nil {
		sent = 0
	}
	d.core.Tel.Sent(ctx, span, sent, err)
	return queue.OfferResult(id, err)
}

// send offers v under id.
func (d *Queue[T]) send(ctx context.Context, id string, v T, mode byte, us int64, user, trace map[string]string) error {
	env, err := d.core.Encode(id, v, user, trace)
	if err != nil {
		return fmt.Errorf("offer %s: %w", d.core.Name(), err)
	}
	status, err := d.core.Offer(ctx, store.OfferItem{ID: id, Env: env, Mode: mode, US: us})
	if err != nil {
		return fmt.Errorf("offer %s: %w", d.core.Name(), err)
	}
	if status == lua.OfferDuplicate {
		return fmt.Errorf("offer %s: id %q is pending: %w", d.core.Name(), id, ErrDuplicate)
	}
	return nil
}

// Remove cancels the pending item with this ID, in O(log N). It returns
// false when no such item is pending (never offered, already removed, or
// already moved to the ready queue). Retries of consumed items are not
// pending items: Remove does not see them.
func (d *Queue[T]) Remove(ctx context.Context, id string) (bool, error) {
	if err := d.err(); err != nil {
		return false, err
	}
	if _, err := queue.OfferID(id, true, nil); err != nil {
		return false, fmt.Errorf("remove from %s: %w", d.core.Name(), err)
	}
	ok, err := queue.Call(ctx, d.core, func(ctx context.Context) (bool, error) {
		return d.core.Store.Remove(ctx, id)
	}, nil)
	if err != nil {
		return false, fmt.Errorf("remove %s from %s: %w", id, d.core.Name(), err)
	}
	return ok, nil
}

// Size returns the number of pending items (offered, not yet due or not yet
// moved to the ready queue). Retries scheduled by consumers (Nack, handler
// errors) are not counted: they are the blocking queue's.
func (d *Queue[T]) Size(ctx context.Context) (int64, error) {
	if err := d.err(); err != nil {
		return 0, err
	}
	n, err := queue.Call(ctx, d.core, d.core.Store.DelayedLen, nil)
	if err != nil {
		return 0, fmt.Errorf("size %s: %w", d.core.Name(), err)
	}
	return n, nil
}

// Clear drops every pending item. Items already ready, and retries
// scheduled by consumers, are not touched. Redis frees the memory in the
// background (UNLINK).
func (d *Queue[T]) Clear(ctx context.Context) error {
	if err := d.err(); err != nil {
		return err
	}
	if _, err := queue.Call(ctx, d.core, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, d.core.Store.ClearDelayed(ctx)
	}, nil); err != nil {
		return fmt.Errorf("clear %s: %w", d.core.Name(), err)
	}
	return nil
}

// Close stops the transfer this delayed queue started in this process. The
// blocking queue is not closed, and pending items stay in Redis: any process
// that opens the queue later moves them when due. Closing twice is harmless.
func (d *Queue[T]) Close() error {
	d.mu.Lock()
	r := d.reg
	d.reg, d.closed = nil, true
	d.mu.Unlock()
	if r != nil {
		r.Close()
	}
	return nil
}

func (d *Queue[T]) err() error {
	if err := d.core.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return nil
}
