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
	"github.com/redelay/redelay/transfer"
)

// Sentinel errors.
var (
	// ErrDuplicate: an item with the ID given by WithID is still pending.
	ErrDuplicate = errors.New("redelay: duplicate id")
	// ErrInvalidArgument: a negative delay, an empty ID, a bad time.
	ErrInvalidArgument = errors.New("redelay: invalid argument")
	// ErrInvalidQueue is blocking.ErrInvalidQueue.
	ErrInvalidQueue = blocking.ErrInvalidQueue
	// ErrClosed is blocking.ErrClosed; a delayed queue returns it after its own Close.
	ErrClosed = blocking.ErrClosed
)

// MaxIDLen bounds an ID given with WithID, in bytes.
const MaxIDLen = 256

// Queue holds items until they fall due, then hands them to its blocking
// queue. It is safe for concurrent use; concurrent Offer and OfferAt calls
// share script calls (each still gets its own outcome), which makes many
// producers cheaper for Redis than the same offers one call each.
type Queue[T any] struct {
	core *queue.Core
	comb combiner

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
// process that takes from or receives on the blocking queue transfers it.
// Useful for short-lived producers (a CLI, a request handler in a
// serverless function). Default: the delayed queue transfers.
func WithoutTransfer() Option {
	return func(o *newOptions) { o.noTransfer = true }
}

// New returns the delayed queue feeding q: items offered here become ready
// in q, in due order, when their time comes. Unless [WithoutTransfer] is
// given, New starts this process's transfer for q's due items at once; it
// runs until Close. New never fails: a problem with q is returned by every
// call.
func New[T any](q *blocking.Queue[T], opts ...Option) *Queue[T] {
	if q == nil {
		return &Queue[T]{core: queue.Invalid(errors.New("delayed.New(nil): nil blocking queue"))}
	}
	var o newOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	d := &Queue[T]{core: q.Core()}
	if !o.noTransfer {
		if r, err := d.core.Register(); err == nil {
			d.reg = r
		}
	}
	return d
}

// OfferOption configures one Offer or OfferAt.
type OfferOption func(*offerOptions)

type offerOptions struct {
	id    string
	hasID bool
}

// WithID gives the item an ID of the caller's choosing (at most 256 bytes),
// such as an order number, to cancel it later with Remove. While an item
// with that ID is pending, offering another returns [ErrDuplicate] and keeps
// the first. Default: a random 16-character ID.
func WithID(id string) OfferOption {
	return func(o *offerOptions) { o.id, o.hasID = id, true }
}

// Offer adds v, due delay from now by the Redis server's clock, and returns
// its ID. A zero delay makes it ready at once (after any item already due).
func (d *Queue[T]) Offer(ctx context.Context, v T, delay time.Duration, opts ...OfferOption) (string, error) {
	if delay < 0 {
		return "", fmt.Errorf("offer: negative delay %v: %w", delay, ErrInvalidArgument)
	}
	return d.offer(ctx, v, "d", delay.Microseconds(), opts)
}

// OfferAt adds v, due at the given time (compared with the Redis server's
// clock), and returns its ID. A time in the past makes it ready at once.
func (d *Queue[T]) OfferAt(ctx context.Context, v T, due time.Time, opts ...OfferOption) (string, error) {
	if due.IsZero() || due.UnixMicro() <= 0 {
		return "", fmt.Errorf("offer: due time %v before 1970: %w", due, ErrInvalidArgument)
	}
	return d.offer(ctx, v, "a", due.UnixMicro(), opts)
}

// offer sends one item; us is the delay (mode "d") or the due time (mode
// "a") in microseconds.
func (d *Queue[T]) offer(ctx context.Context, v T, mode string, us int64, opts []OfferOption) (string, error) {
	if err := d.err(); err != nil {
		return "", err
	}
	var o offerOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	id := o.id
	switch {
	case o.hasID && id == "":
		return "", fmt.Errorf("offer: empty id: %w", ErrInvalidArgument)
	case len(id) > MaxIDLen:
		return "", fmt.Errorf("offer: id of %d bytes, at most %d: %w", len(id), MaxIDLen, ErrInvalidArgument)
	case id == "":
		id = queue.NewID()
	}
	delay := time.Duration(us) * time.Microsecond
	if mode == "a" {
		delay = time.Until(time.UnixMicro(us))
	}
	ctx, span, headers := d.core.Tel.StartSend(ctx, id, max(delay, 0))
	err := d.send(ctx, id, !o.hasID, v, mode, us, headers)
	sent := 1
	if err != nil {
		sent = 0
	}
	d.core.Tel.Sent(ctx, span, sent, err)
	if err != nil {
		return "", err
	}
	return id, nil
}

// send offers v under id. A generated ID (96 random bits) found pending can
// only be this offer's own: the client sent the script again after a lost
// reply, and the first run stored the item. That is success, not
// ErrDuplicate.
func (d *Queue[T]) send(ctx context.Context, id string, generated bool, v T, mode string, us int64, headers map[string]string) error {
	env, err := d.core.Encode(id, v, headers)
	if err != nil {
		return fmt.Errorf("offer %s: %w", d.core.Keys.Name, err)
	}
	status, err := d.combineOffer(ctx, &offerReq{id: id, env: env, mode: mode, us: us})
	if err != nil {
		return err
	}
	if status == lua.OfferDuplicate && !generated {
		return fmt.Errorf("offer %s: id %q is pending: %w", d.core.Keys.Name, id, ErrDuplicate)
	}
	return nil
}

// Remove cancels the pending item with this ID, in O(log N). It returns
// false when no such item is pending (never offered, already removed, or
// already moved to the ready queue).
func (d *Queue[T]) Remove(ctx context.Context, id string) (bool, error) {
	if err := d.err(); err != nil {
		return false, err
	}
	if id == "" {
		return false, fmt.Errorf("remove: empty id: %w", ErrInvalidArgument)
	}
	k := d.core.Keys
	n, err := lua.Remove.Run(ctx, d.core.RDB, []string{k.Delayed, k.Items}, id).Int64()
	if err != nil {
		return false, fmt.Errorf("remove %s from %s: %w", id, k.Name, err)
	}
	return n == 1, nil
}

// Size returns the number of pending items (offered, not yet due or not yet
// moved to the ready queue).
func (d *Queue[T]) Size(ctx context.Context) (int64, error) {
	if err := d.err(); err != nil {
		return 0, err
	}
	n, err := d.core.RDB.ZCard(ctx, d.core.Keys.Delayed).Result()
	if err != nil {
		return 0, fmt.Errorf("size %s: %w", d.core.Keys.Name, err)
	}
	return n, nil
}

// Clear drops every pending item. Items already ready are not touched.
// Redis frees the memory in the background (UNLINK).
func (d *Queue[T]) Clear(ctx context.Context) error {
	if err := d.err(); err != nil {
		return err
	}
	k := d.core.Keys
	if err := d.core.RDB.Unlink(ctx, k.Delayed, k.Items).Err(); err != nil {
		return fmt.Errorf("clear %s: %w", k.Name, err)
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
