package inspect

import (
	"context"
	"fmt"

	iqueue "github.com/redelay/redelay/internal/queue"

	"github.com/redelay/redelay/blocking"
)

// MaxPage bounds one List: at most 1000 items per call.
const MaxPage = blocking.MaxPage

// MaxOffset bounds List's offset: far beyond what one Redis server holds,
// and below where the scripts would lose the number's precision.
const MaxOffset = 1 << 40

// List returns up to limit items of the queue in state st, skipping the
// first offset, without taking them:
//
//   - Delayed and Retry: in due order (ties in offer order), one atomic
//     page. O(log N + offset + limit).
//   - Ready and Dead: in take order, the next one first (Dead: oldest
//     first, after any of priority the dead-letter queue gave back). One
//     atomic page, O(offset + limit).
//   - Inflight: the leased items, earliest lease deadline first, then the
//     items being handed to a consumer (no lease yet: LeaseDeadline is
//     zero). Up to four round trips (the server's clock for Expired, the
//     lease count, the leases, the claimed list), not atomic: a lease
//     settled meanwhile shifts the page. O(log N + offset + limit).
//
// On a queue with partitions (blocking.WithPartitions), List reads the
// first offset+limit items of every partition and merges them: Delayed,
// Retry and Dead by due time, Ready by priority then due time, Inflight
// by lease deadline (items not leased yet last); O(partitions ×
// (offset+limit)).
//
// Plus one round trip to check that the queue exists. offset must be 0 to
// MaxOffset and limit 1 to MaxPage; a later page may shift as items move.
// Items that cannot be decoded are listed with DecodeError set.
func (in *Inspector) List(ctx context.Context, queue string, st State, offset, limit int) ([]Item, error) {
	if err := checkPage(st, offset, limit); err != nil {
		return nil, wrap("list", queue, err)
	}
	q, codec, err := in.open(ctx, queue)
	if err != nil {
		return nil, wrap("list", queue, err)
	}
	v, err := newView(ctx, q, st, codec)
	if err != nil {
		return nil, wrap("list", queue, err)
	}
	entries, err := q.List(ctx, iqueue.State(st), offset, limit)
	if err != nil {
		return nil, wrap("list", queue, err)
	}
	return v.items(entries), nil
}

// checkPage validates List's arguments.
func checkPage(st State, offset, limit int) error {
	if err := st.check(); err != nil {
		return err
	}
	if offset < 0 || offset > MaxOffset {
		return fmt.Errorf("offset %d out of range 0..%d: %w", offset, MaxOffset, ErrInvalidArgument)
	}
	if limit < 1 || limit > MaxPage {
		return fmt.Errorf("limit %d out of range 1..%d: %w", limit, MaxPage, ErrInvalidArgument)
	}
	return nil
}

// Get returns the item with this ID, wherever it is: it looks in the
// delayed items (O(log N)), then the retries, the in-flight items, the
// ready items and the dead letters, reading each from its start, at most
// blocking.ScanLimit entries per state, 500 per round trip (and the first
// MaxPage items being handed to consumers). Plus one round trip to check
// that the queue exists, and one for the server's clock when the item is
// in flight. An item that moves between states while Get looks may be
// missed: ErrNotFound then, and a second Get finds it. Also ErrNotFound
// when no item has this ID.
func (in *Inspector) Get(ctx context.Context, queue, id string) (Item, error) {
	q, codec, err := in.openID(ctx, queue, id)
	if err != nil {
		return Item{}, wrap("get", queue, err)
	}
	st, e, found, err := q.Find(ctx, id, iqueue.Delayed, iqueue.Retry, iqueue.Inflight, iqueue.Ready, iqueue.Dead)
	if err == nil && !found {
		err = fmt.Errorf("no item %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return Item{}, wrap("get", queue, err)
	}
	v, err := newView(ctx, q, State(st), codec)
	if err != nil {
		return Item{}, wrap("get", queue, err)
	}
	return v.item(e), nil
}
