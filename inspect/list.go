package inspect

import (
	"context"
	"fmt"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/store"
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
	t, err := in.open(ctx, queue)
	if err != nil {
		return nil, wrap("list", queue, err)
	}
	if len(t.parts) > 1 {
		items, err := in.listParts(ctx, t, st, offset, limit)
		if err != nil {
			return nil, wrap("list", queue, err)
		}
		return items, nil
	}
	q, codec := t.parts[0], t.codec
	v, err := newView(ctx, q, st, codec)
	if err != nil {
		return nil, wrap("list", queue, err)
	}
	entries, err := in.page(ctx, q, st, offset, limit)
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

// page reads one page of the entries in state st.
func (in *Inspector) page(ctx context.Context, q *store.Queue, st State, offset, limit int) ([]store.Entry, error) {
	switch st {
	case Delayed:
		return q.ListDelayed(ctx, offset, limit)
	case Retry:
		return q.ListRetry(ctx, offset, limit)
	case Ready:
		return q.ListReady(ctx, offset, limit)
	case Dead:
		// The dead letters are the ready list of the dead-letter queue.
		return in.c.Queue(q.K.Dead()).ListReady(ctx, offset, limit)
	case Inflight:
		return pageInflight(ctx, q, int64(offset), int64(limit))
	}
	return nil, st.check()
}

// pageInflight reads a page of the leased items followed by the claimed
// list, as one sequence.
func pageInflight(ctx context.Context, q *store.Queue, offset, limit int64) ([]store.Entry, error) {
	n, err := q.LeaseCount(ctx)
	if err != nil {
		return nil, err
	}
	leased := max(0, min(n-offset, limit)) // how many of the page's positions are leases
	var out []store.Entry
	if leased > 0 {
		if out, err = q.ListLeased(ctx, int(offset), int(leased)); err != nil {
			return nil, err
		}
	}
	if leased == limit {
		return out, nil
	}
	claimed, err := q.ListClaimed(ctx, int(max(0, offset-n)), int(limit-leased))
	if err != nil {
		return nil, err
	}
	return append(out, claimed...), nil
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
	h, found, err := in.locate(ctx, q, id, Delayed, Retry, Inflight, Ready, Dead)
	if err == nil && !found {
		err = noItem(id)
	}
	if err != nil {
		return Item{}, wrap("get", queue, err)
	}
	v, err := newView(ctx, q, h.state, codec)
	if err != nil {
		return Item{}, wrap("get", queue, err)
	}
	return v.item(h.e), nil
}

// noItem is the error for an item found nowhere.
func noItem(id string) error {
	return fmt.Errorf("no item %q: %w", id, ErrNotFound)
}

// hit is an item found by ID: its state and the entry, which names it for
// a change (the retry member, the lease token, the exact bytes).
type hit struct {
	state State
	e     store.Entry
}

// locate looks for the item id in each of states, in order, and stops at
// the first it is in; found is false when it is in none.
func (in *Inspector) locate(ctx context.Context, q *store.Queue, id string, states ...State) (h hit, found bool, err error) {
	for _, st := range states {
		e, found, err := find(ctx, q, st, id)
		if err != nil || found {
			return hit{st, e}, found, err
		}
	}
	return hit{}, false, nil
}

// find looks for the item id in state st: by ID in the delayed set, by a
// bounded scan elsewhere.
func find(ctx context.Context, q *store.Queue, st State, id string) (store.Entry, bool, error) {
	switch st {
	case Delayed:
		return q.Get(ctx, id)
	case Retry:
		return q.Find(ctx, store.PartRetry, id, blocking.ScanLimit)
	case Ready:
		return q.Find(ctx, store.PartReady, id, blocking.ScanLimit)
	case Dead:
		return q.Find(ctx, store.PartDead, id, blocking.ScanLimit)
	case Inflight:
		e, found, err := q.Find(ctx, store.PartInflight, id, blocking.ScanLimit)
		if err != nil || found {
			return e, found, err
		}
		return findClaimed(ctx, q, id)
	}
	return store.Entry{}, false, st.check()
}

// findClaimed looks for the item id among the first MaxPage items being
// handed to a consumer (a list that is normally empty between two round
// trips). The entry found has no Key: it is not leased.
func findClaimed(ctx context.Context, q *store.Queue, id string) (store.Entry, bool, error) {
	entries, err := q.ListClaimed(ctx, 0, MaxPage)
	if err != nil {
		return store.Entry{}, false, err
	}
	for _, e := range entries {
		if got, err := envelope.PeekID(e.Data); err == nil && got == id {
			return e, true, nil
		}
	}
	return store.Entry{}, false, nil
}
