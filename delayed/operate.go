package delayed

import (
	"context"
	"fmt"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/queue"
)

// ErrNotFound: no pending item has the given ID (never offered, removed,
// or already moved on to the ready queue). It is blocking.ErrNotFound.
var ErrNotFound = blocking.ErrNotFound

// Item is a pending item: the same type as blocking.Item. Its DueAt is
// exact to the microsecond; Attempt is 0 (retries are the blocking queue's,
// and not pending items).
type Item[T any] = blocking.Item[T]

// MaxPage bounds one List: at most 1000 items per call.
const MaxPage = blocking.MaxPage

// Get returns the pending item with this ID, or [ErrNotFound]. O(log N).
// An item whose stored bytes this release cannot read returns an error
// wrapping [ErrCorrupt]; one whose value the codec cannot decode into T,
// [ErrDecode] and the codec's error.
func (d *Queue[T]) Get(ctx context.Context, id string) (Item[T], error) {
	if err := d.checkID("get", id); err != nil {
		return Item[T]{}, err
	}
	e, found, err := d.q.Get(ctx, id)
	if err != nil {
		return Item[T]{}, fmt.Errorf("get %s from %s: %w", id, d.q.Name(), err)
	}
	if !found {
		return Item[T]{}, d.notFound(id)
	}
	it, err := d.q.Item(e, true)
	var v T
	if err == nil {
		v, err = queue.Decode[T](d.q, it)
	}
	if err != nil {
		return Item[T]{}, fmt.Errorf("get %s from %s: %w", id, d.q.Name(), err)
	}
	return item(it, v), nil
}

// item makes the typed item of a stored one.
func item[T any](it queue.Item, v T) Item[T] {
	return Item[T]{
		ID: it.ID, Value: v, Attempt: it.Attempt, EnqueuedAt: it.EnqueuedAt, DueAt: it.DueAt, Headers: it.Headers,
		Group: it.Group,
	}
}

func (d *Queue[T]) notFound(id string) error {
	return fmt.Errorf("%s: no pending item with id %q: %w", d.q.Name(), id, ErrNotFound)
}

func (d *Queue[T]) checkID(op, id string) error {
	if err := d.err(); err != nil {
		return err
	}
	if err := queue.CheckID(id); err != nil {
		return fmt.Errorf("%s %s: %w", op, d.q.Name(), err)
	}
	return nil
}

// Contains reports whether an item with this ID is pending. O(1).
func (d *Queue[T]) Contains(ctx context.Context, id string) (bool, error) {
	if err := d.checkID("contains", id); err != nil {
		return false, err
	}
	ok, err := d.q.Contains(ctx, id)
	if err != nil {
		return false, fmt.Errorf("contains %s in %s: %w", id, d.q.Name(), err)
	}
	return ok, nil
}

// Reschedule moves the pending item with this ID to be due delay from now
// (by the Redis server's clock), in one atomic step: its ID, value and
// headers stay, and it is never lost or delivered twice, whatever
// transfers run meanwhile. An earlier due time wakes the transfers at
// once, so the item fires on time as a fresh offer would; a zero delay
// makes it ready at once (after any item already due). O(log N). It
// returns [ErrNotFound] when the item is no longer pending (already ready,
// delivered or removed).
func (d *Queue[T]) Reschedule(ctx context.Context, id string, delay time.Duration) error {
	if err := queue.CheckDelay("delay", delay); err != nil {
		return fmt.Errorf("reschedule %s: %w", d.q.Name(), err)
	}
	return d.move(ctx, "reschedule", id, queue.Move{Mode: 'd', US: delay.Microseconds()})
}

// RescheduleAt is Reschedule to a due time. A due time that passed more
// than a second ago (by this process's clock) returns [ErrInvalidArgument]
// unless [AllowPast] asks for it: [Promote] is the way to make an item
// ready now. With AllowPast, a past time makes the item ready at once,
// ahead of due items still pending that are due after it. Times before
// 1970 or after 2255 return ErrInvalidArgument.
func (d *Queue[T]) RescheduleAt(ctx context.Context, id string, due time.Time, opts ...RescheduleOption) error {
	var o rescheduleOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := queue.CheckDue(due); err != nil {
		return fmt.Errorf("reschedule %s: %w", d.q.Name(), err)
	}
	if !o.allowPast {
		if err := queue.CheckNotPast(due, d.q.Clock()); err != nil {
			return fmt.Errorf("reschedule %s in %s: %w; Promote makes it ready now, or pass AllowPast to keep a past due time", id, d.q.Name(), err)
		}
	}
	return d.move(ctx, "reschedule", id, queue.Move{Mode: 'a', US: due.UnixMicro()})
}

// RescheduleOption configures one RescheduleAt.
type RescheduleOption func(*rescheduleOptions)

type rescheduleOptions struct{ allowPast bool }

// AllowPast lets RescheduleAt set a due time that has passed, which makes
// the item ready at once, ahead of due items still pending that are due
// after it. Without it such a time is refused. Its due time stays the past
// one, so Stats.Latency counts from it while the item waits.
func AllowPast() RescheduleOption { return func(o *rescheduleOptions) { o.allowPast = true } }

// Promote makes the pending item with this ID due now: it joins the ready
// queue at once (behind the items already ready), its due time set to now.
// O(log N). It returns [ErrNotFound] when the item is no longer pending.
func (d *Queue[T]) Promote(ctx context.Context, id string) error {
	return d.move(ctx, "promote", id, queue.Move{Mode: 'n'})
}

func (d *Queue[T]) move(ctx context.Context, op, id string, m queue.Move) error {
	if err := d.checkID(op, id); err != nil {
		return err
	}
	found, err := d.q.Reschedule(ctx, id, m)
	if err != nil {
		return fmt.Errorf("%s %s in %s: %w", op, id, d.q.Name(), err)
	}
	if !found {
		return fmt.Errorf("%s: %w", op, d.notFound(id))
	}
	return nil
}

// Update replaces the value of the pending item with this ID; its ID, due
// time and headers stay. O(1). It returns [ErrNotFound] when the item is no
// longer pending, [blocking.ErrPayloadTooLarge] when the new value,
// with the item's headers, is over the queue's limit (as an offer counts),
// and [ErrCorrupt] when the stored item cannot be read or rewritten by
// this release (nothing changed).
func (d *Queue[T]) Update(ctx context.Context, id string, v T) error {
	if err := d.checkID("update", id); err != nil {
		return err
	}
	cfg := d.q.Config()
	payload, err := cfg.Codec.Marshal(v)
	if err != nil {
		return fmt.Errorf("update %s in %s: encode with %s codec: %w", id, d.q.Name(), cfg.Codec.Name(), err)
	}
	limit := cfg.MaxPayload
	if limit > 0 && len(payload) > limit {
		return fmt.Errorf("update %s in %s: %w: %d bytes encoded, limit %d", id, d.q.Name(), blocking.ErrPayloadTooLarge, len(payload), limit)
	}
	res, err := d.q.Update(ctx, id, payload, limit)
	switch {
	case err != nil:
		return fmt.Errorf("update %s in %s: %w", id, d.q.Name(), err)
	case res == 0:
		return fmt.Errorf("update: %w", d.notFound(id))
	case res < 0:
		return fmt.Errorf("update %s in %s: %w: %d bytes encoded with the item's headers, limit %d",
			id, d.q.Name(), blocking.ErrPayloadTooLarge, -res, limit)
	}
	return nil
}

// List returns up to limit pending items in due order (ties in offer
// order), skipping the first offset: a page of the delayed set, read
// atomically. O(log N + limit) (Redis finds a rank in a skip list in
// O(log N)). limit must be 1 to MaxPage and
// offset not negative. Items that cannot be decoded into T are left out
// and logged.
func (d *Queue[T]) List(ctx context.Context, offset, limit int) ([]Item[T], error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	if offset < 0 || limit < 1 || limit > MaxPage {
		return nil, fmt.Errorf("list %s: offset %d, limit %d: offset must be >= 0 and limit 1..%d: %w",
			d.q.Name(), offset, limit, MaxPage, ErrInvalidArgument)
	}
	entries, err := d.q.List(ctx, queue.Delayed, offset, limit)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.q.Name(), err)
	}
	return queue.Items(d.q, entries, true, item[T]), nil
}
