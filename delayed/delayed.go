package delayed

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/queue"
)

// Sentinel errors.
var (
	// ErrDuplicate: an item with the ID given by WithID is still pending,
	// or (WithUniqueFor) one was offered within the window.
	ErrDuplicate = queue.ErrDuplicate
	// ErrInvalidArgument is blocking.ErrInvalidArgument: a negative or
	// out-of-range delay or time, a bad ID or header.
	ErrInvalidArgument = blocking.ErrInvalidArgument
	// ErrInvalidQueue is blocking.ErrInvalidQueue.
	ErrInvalidQueue = blocking.ErrInvalidQueue
	// ErrClosed is blocking.ErrClosed; a delayed queue returns it after its own Close.
	ErrClosed = blocking.ErrClosed
	// ErrQueueFull is blocking.ErrQueueFull: the queue is at its bound
	// (blocking.WithMaxSize); nothing was stored.
	ErrQueueFull = blocking.ErrQueueFull
	// ErrNotReplicated is blocking.ErrNotReplicated: with
	// blocking.WithReplicaAck, the offer was stored on the master (its ID
	// is returned with the error) but replicas did not confirm it in time.
	ErrNotReplicated = blocking.ErrNotReplicated
	// ErrCorrupt is blocking.ErrCorrupt: Get or Update of an item whose
	// stored bytes this release cannot read (no item at all, malformed, or
	// of a newer release), or Schedules with a malformed schedule record.
	ErrCorrupt = blocking.ErrCorrupt
	// ErrDecode is blocking.ErrDecode: Get of an item whose value the
	// queue's codec cannot decode into T.
	ErrDecode = blocking.ErrDecode
	// ErrOutOfMemory is blocking.ErrOutOfMemory: Redis refused the offer
	// because its memory is at maxmemory; nothing was stored.
	ErrOutOfMemory = blocking.ErrOutOfMemory
)

// MaxIDLen bounds an ID given with WithID, in bytes.
const MaxIDLen = blocking.MaxIDLen

// Queue holds items until they fall due, then hands them to its blocking
// queue. It is safe for concurrent use; concurrent Offer and OfferAt calls
// share script calls (each still gets its own outcome), which makes many
// producers cheaper for Redis than the same offers one call each.
type Queue[T any] struct {
	q *queue.Queue

	mu         sync.Mutex
	unregister func() // this queue's transfer registrations; nil WithoutTransfer
	closed     bool
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
//
// When q was opened with blocking.WithPartitions, each item goes to the
// partition of its ID (calls by ID stay one call on one partition), Size,
// Clear and List cover every partition, due order holds within a
// partition, and the transfer runs for every partition. Recurring
// schedules live in partition 0.
func New[T any](q *blocking.Queue[T], opts ...Option) *Queue[T] {
	var uq *queue.Queue
	if q != nil && queue.Of != nil {
		uq = queue.Of(q)
	}
	if uq == nil {
		return &Queue[T]{q: queue.Invalid(errors.New("delayed.New(nil): nil blocking queue"))}
	}
	var o newOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	d := &Queue[T]{q: uq}
	if !o.noTransfer && uq.Err() == nil {
		unregister, err := uq.Register()
		if err != nil {
			return &Queue[T]{q: queue.Invalid(err)}
		}
		d.unregister = unregister
	}
	return d
}

// OfferOption configures one Offer, OfferAt or OfferBatch.
type OfferOption func(*offerOptions)

type offerOptions struct{ r queue.OfferRequest }

// WithReplace, used with WithID, makes an offer replace the pending item
// with that ID, if there is one: its value, headers and due time become
// this offer's, atomically, and it keeps its ID, its first EnqueuedAt and
// its place among items due at the same time. The offer returns the ID
// and a nil error either way. Without a pending item it is a plain offer.
//
// Combinations: WithReplace, WithDebounce and WithUniqueFor each need
// WithID, exclude one another (debounce is a replace with a bound;
// replace and unique contradict), and are refused by OfferBatch: any other
// use returns [ErrInvalidArgument].
func WithReplace() OfferOption {
	return func(o *offerOptions) { o.r.SetDup(queue.DupReplace, "WithReplace", 0) }
}

// WithDebounce, used with WithID, makes an offer replace the pending item
// with that ID, as WithReplace does, with a due time of the new delay from
// now, but never later than the first offer's time + maxWait: a "save when
// the user stops typing" fires after the last keystroke, and at least every
// maxWait during a stream of them. Without a pending item it is a plain
// offer (which starts a new maxWait). maxWait must be positive.
func WithDebounce(maxWait time.Duration) OfferOption {
	return func(o *offerOptions) { o.r.SetDup(queue.DupDebounce, "WithDebounce", maxWait) }
}

// WithUniqueFor, used with WithID, refuses a second offer of the same ID
// within window of the accepted one with [ErrDuplicate], even after the
// first was delivered, acked or dead-lettered; after the window the ID
// is accepted again (but still refused while an item with it is pending,
// as with WithID alone). The window lives in Redis as one key per ID that
// expires with it, so its memory is bounded by one window's offers.
// window must be positive.
func WithUniqueFor(window time.Duration) OfferOption {
	return func(o *offerOptions) { o.r.SetDup(queue.DupUnique, "WithUniqueFor", window) }
}

// WithID gives the item an ID of the caller's choosing (1 to 256 bytes),
// such as an order number, to cancel it later with Remove. While an item
// with that ID is pending, offering another returns [ErrDuplicate] and keeps
// the first. Default: a random 16-character ID. Not for OfferBatch, which
// generates every ID.
func WithID(id string) OfferOption {
	return func(o *offerOptions) { o.r.ID, o.r.HasID = id, true }
}

// WithPriority gives the item a priority from 0 (the default) to
// blocking.MaxPriority, which applies once it is ready: it is never ready
// before its due time, whatever its priority; among ready items the
// highest priority is taken first (see blocking.WithPriority). It applies
// to every item of an OfferBatch, and with WithReplace or WithDebounce the
// replacing offer's priority wins. Out of range: [ErrInvalidArgument].
func WithPriority(p int) OfferOption {
	return func(o *offerOptions) { o.r.Priority = p }
}

// WithGroup puts the item in group key once it falls due: from then on it
// is served round-robin with the other groups' items, within its group's
// limits (see blocking.WithGroup). A retried item goes back to its group.
// A key must be 1 to blocking.MaxGroupLen bytes of UTF-8, else the offer
// returns ErrInvalidArgument.
func WithGroup(key string) OfferOption {
	return func(o *offerOptions) { o.r.Group, o.r.HasGroup = key, true }
}

// WithTTL gives the item a time to live after its due time: not delivered
// by due time + d, it goes to the dead letters with the error "expired"
// instead (see blocking.WithTTL). The deadline is fixed when the item is
// offered: a Reschedule does not move it. It applies to every item of an
// OfferBatch. Default: none; 1 ms to 10 years, else [ErrInvalidArgument].
func WithTTL(d time.Duration) OfferOption {
	return func(o *offerOptions) { o.r.TTL = d }
}

// WithHeaders attaches metadata to the item, seen by consumers in
// Delivery.Headers; see blocking.WithHeaders for the rules.
func WithHeaders(h map[string]string) OfferOption {
	return func(o *offerOptions) { o.r.Headers = h }
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
// ErrDuplicate while it is pending). With blocking.WithReplicaAck, an
// error wrapping [ErrNotReplicated] also comes with the ID: the item is
// stored on the master, and replicas did not confirm it in time. An error
// without an ID means it was not stored: among them [ErrOutOfMemory],
// Redis's refusal of a write past its maxmemory.
func (d *Queue[T]) Offer(ctx context.Context, v T, delay time.Duration, opts ...OfferOption) (string, error) {
	return d.offer(ctx, v, queue.After(delay), opts)
}

// OfferAt adds v, due at the given time (compared with the Redis server's
// clock), and returns its ID. A time in the past makes it ready at once.
// Times before 1970 or after 2255 return [ErrInvalidArgument].
func (d *Queue[T]) OfferAt(ctx context.Context, v T, due time.Time, opts ...OfferOption) (string, error) {
	return d.offer(ctx, v, queue.At(due), opts)
}

// offer sends one item; us is the delay (mode 'd') or the due time (mode
// 'a') in microseconds.
func (d *Queue[T]) offer(ctx context.Context, v T, w queue.When, opts []OfferOption) (string, error) {
	if w.Err() == nil {
		if err := d.err(); err != nil {
			return "", err
		}
	}
	var o offerOptions
	o.apply(opts)
	return d.q.Offer(ctx, v, w, o.r)
}

// Remove cancels the pending item with this ID, in O(log N). It returns
// false when no such item is pending (never offered, already removed, or
// already moved to the ready queue). Retries of consumed items are not
// pending items: Remove does not see them.
func (d *Queue[T]) Remove(ctx context.Context, id string) (bool, error) {
	if err := d.checkID("remove from", id); err != nil {
		return false, err
	}
	ok, err := d.q.Remove(ctx, id)
	if err != nil {
		return false, fmt.Errorf("remove %s from %s: %w", id, d.q.Name(), err)
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
	return d.q.DelayedSize(ctx)
}

// Clear drops every pending item. Items already ready, and retries
// scheduled by consumers, are not touched. Redis frees the memory in the
// background (UNLINK).
func (d *Queue[T]) Clear(ctx context.Context) error {
	if err := d.err(); err != nil {
		return err
	}
	if err := d.q.ClearDelayed(ctx); err != nil {
		return fmt.Errorf("clear %s: %w", d.q.Name(), err)
	}
	return nil
}

// Close stops the transfer this delayed queue started in this process. The
// blocking queue is not closed, and pending items stay in Redis: any process
// that opens the queue later moves them when due. Closing twice is harmless.
func (d *Queue[T]) Close() error {
	d.mu.Lock()
	unregister := d.unregister
	d.unregister, d.closed = nil, true
	d.mu.Unlock()
	if unregister != nil {
		unregister()
	}
	return nil
}

func (d *Queue[T]) err() error {
	if err := d.q.Err(); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	return nil
}
