package delayed

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
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
	if d.parts != nil {
		return d.route(id).Get(ctx, id)
	}
	type hit struct {
		e     store.Entry
		found bool
	}
	h, err := queue.Call(ctx, d.core, func(ctx context.Context) (hit, error) {
		e, found, err := d.core.Store.Get(ctx, id)
		return hit{e, found}, err
	}, nil)
	if err != nil {
		return Item[T]{}, fmt.Errorf("get %s from %s: %w", id, d.core.Name(), err)
	}
	if !h.found {
		return Item[T]{}, d.notFound(id)
	}
	it, err := d.item(h.e)
	if err != nil {
		return Item[T]{}, fmt.Errorf("get %s from %s: %w", id, d.core.Name(), err)
	}
	return it, nil
}

func (d *Queue[T]) item(e store.Entry) (Item[T], error) {
	v, env, err := queue.DecodeValue[T](d.core, e.Data)
	if err != nil {
		return Item[T]{}, err
	}
	return Item[T]{
		ID: env.ID, Value: v, Attempt: env.Attempt, EnqueuedAt: env.EnqueuedAt,
		DueAt: time.UnixMicro(e.Score), Headers: maps.Clone(env.Headers),
	}, nil
}

func (d *Queue[T]) notFound(id string) error {
	return fmt.Errorf("%s: no pending item with id %q: %w", d.core.Name(), id, ErrNotFound)
}

func (d *Queue[T]) checkID(op, id string) error {
	if err := d.err(); err != nil {
		return err
	}
	if _, err := queue.OfferID(id, true, nil); err != nil {
		return fmt.Errorf("%s %s: %w", op, d.core.Name(), err)
	}
	return nil
}

// Contains reports whether an item with this ID is pending. O(1).
func (d *Queue[T]) Contains(ctx context.Context, id string) (bool, error) {
	if err := d.checkID("contains", id); err != nil {
		return false, err
	}
	if d.parts != nil {
		return d.route(id).Contains(ctx, id)
	}
	ok, err := queue.Call(ctx, d.core, func(ctx context.Context) (bool, error) {
		return d.core.Store.Contains(ctx, id)
	}, nil)
	if err != nil {
		return false, fmt.Errorf("contains %s in %s: %w", id, d.core.Name(), err)
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
		return fmt.Errorf("reschedule %s: %w", d.core.Name(), err)
	}
	return d.move(ctx, "reschedule", id, store.Move{Mode: 'd', US: delay.Microseconds()})
}

// RescheduleAt is Reschedule to a due time: a time in the past makes the
// item ready at once (after any item already due). Times before 1970 or
// after 2255 return [ErrInvalidArgument].
func (d *Queue[T]) RescheduleAt(ctx context.Context, id string, due time.Time) error {
	if err := queue.CheckDue(due); err != nil {
		return fmt.Errorf("reschedule %s: %w", d.core.Name(), err)
	}
	return d.move(ctx, "reschedule", id, store.Move{Mode: 'a', US: due.UnixMicro()})
}

// Promote makes the pending item with this ID due now: it joins the ready
// queue at once (behind the items already ready), its due time set to now.
// O(log N). It returns [ErrNotFound] when the item is no longer pending.
func (d *Queue[T]) Promote(ctx context.Context, id string) error {
	return d.move(ctx, "promote", id, store.Move{Mode: 'n'})
}

func (d *Queue[T]) move(ctx context.Context, op, id string, m store.Move) error {
	if err := d.checkID(op, id); err != nil {
		return err
	}
	if d.parts != nil {
		return d.route(id).move(ctx, op, id, m)
	}
	st, err := queue.Call(ctx, d.core, func(ctx context.Context) (int64, error) {
		return d.core.Store.Reschedule(ctx, id, m)
	}, nil)
	if err != nil {
		return fmt.Errorf("%s %s in %s: %w", op, id, d.core.Name(), err)
	}
	if st == store.RescheduleNotFound {
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
	if d.parts != nil {
		return d.route(id).Update(ctx, id, v)
	}
	payload, err := d.core.Cfg.Codec.Marshal(v)
	if err != nil {
		return fmt.Errorf("update %s in %s: encode with %s codec: %w", id, d.core.Name(), d.core.Cfg.Codec.Name(), err)
	}
	limit := d.core.Cfg.MaxPayload
	if limit > 0 && len(payload) > limit {
		return fmt.Errorf("update %s in %s: %w: %d bytes encoded, limit %d", id, d.core.Name(), blocking.ErrPayloadTooLarge, len(payload), limit)
	}
	res, err := queue.Call(ctx, d.core, func(ctx context.Context) (int64, error) {
		return d.core.Store.Update(ctx, id, payload, limit)
	}, nil)
	switch {
	case err != nil:
		return fmt.Errorf("update %s in %s: %w", id, d.core.Name(), queue.Corrupt(err))
	case res == 0:
		return fmt.Errorf("update: %w", d.notFound(id))
	case res < 0:
		return fmt.Errorf("update %s in %s: %w: %d bytes encoded with the item's headers, limit %d",
			id, d.core.Name(), blocking.ErrPayloadTooLarge, -res, limit)
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
			d.core.Name(), offset, limit, MaxPage, ErrInvalidArgument)
	}
	if d.parts != nil {
		return d.listParts(ctx, offset, limit)
	}
	entries, err := queue.Call(ctx, d.core, func(ctx context.Context) ([]store.Entry, error) {
		return d.core.Store.ListDelayed(ctx, offset, limit)
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.core.Name(), err)
	}
	out := make([]Item[T], 0, len(entries))
	for _, e := range entries {
		it, err := d.item(e)
		if err != nil {
			d.core.Cfg.Logger.Warn("redelay: an item that cannot be decoded was left out of a listing",
				"queue", d.core.Name(), "id", e.Key, "err", err)
			continue
		}
		out = append(out, it)
	}
	return out, nil
}
