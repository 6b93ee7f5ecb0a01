package queue

import (
	"context"
	"fmt"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/store"
)

// SetPaused pauses or resumes every part, for every process.
func (q *Queue) SetPaused(ctx context.Context, paused bool) error {
	_, err := perPart(ctx, q, "", func(p *part) (struct{}, error) { return struct{}{}, p.SetPaused(ctx, paused) })
	return err
}

// Purge drops every item in the given states, and returns how many it
// dropped.
func (q *Queue) Purge(ctx context.Context, states ...State) (int64, error) {
	parts := make([]store.Part, len(states))
	for i, st := range states {
		parts[i] = storePart(st)
	}
	return q.count(ctx, "", func(ctx context.Context, p *part) (int64, error) {
		return Call(ctx, p, func(ctx context.Context) (int64, error) {
			return p.Store.Purge(ctx, parts...)
		}, nil)
	})
}

// storePart is the set of keys Purge drops for a state.
func storePart(st State) store.Part {
	switch st {
	case Delayed:
		return store.PartDelayed
	case Retry:
		return store.PartRetry
	case Ready:
		return store.PartReady
	case Inflight:
		return store.PartInflight
	default:
		return store.PartDead
	}
}

// ClearDelayed drops every delayed item not yet due.
func (q *Queue) ClearDelayed(ctx context.Context) error {
	_, err := perPart(ctx, q, "", func(p *part) (struct{}, error) {
		return Call(ctx, p, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, p.Store.ClearDelayed(ctx)
		}, nil)
	})
	return err
}

// Remove removes the pending delayed item id; false when it was not
// pending.
func (q *Queue) Remove(ctx context.Context, id string) (bool, error) {
	for _, c := range q.lookIn(id) {
		ok, err := Call(ctx, c, func(ctx context.Context) (bool, error) {
			return c.Store.Remove(ctx, id)
		}, nil)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// Move says where Reschedule puts an item.
type Move = store.Move

// Reschedule moves the pending delayed item id to a new due time, or to
// the ready list; found is false when it is not pending.
func (q *Queue) Reschedule(ctx context.Context, id string, m Move) (found bool, err error) {
	for _, c := range q.lookIn(id) {
		o, err := Call(ctx, c, func(ctx context.Context) (store.RescheduleOutcome, error) {
			return c.Store.Reschedule(ctx, id, m)
		}, nil)
		if o != store.RescheduleNotFound || err != nil {
			return o != store.RescheduleNotFound, err
		}
	}
	return false, nil
}

// Update replaces the payload of the pending delayed item id, when it and
// the item's producer headers fit limit bytes (0: no limit): it returns 1
// updated, 0 not pending, or minus the size over the limit.
func (q *Queue) Update(ctx context.Context, id string, payload []byte, limit int) (int64, error) {
	for _, c := range q.lookIn(id) {
		n, err := Call(ctx, c, func(ctx context.Context) (int64, error) {
			return c.Store.Update(ctx, id, payload, limit)
		}, nil)
		if n != 0 || err != nil {
			return n, Corrupt(err)
		}
	}
	return 0, nil
}

// redriveBatch bounds one redrive script call.
const redriveBatch = 500

// Redrive moves up to max dead letters (all when max <= 0) back to the
// queue, part after part, each part's to itself, in batches that move
// atomically, and returns how many moved.
func (q *Queue) Redrive(ctx context.Context, max int) (int, error) {
	if err := q.Err(); err != nil {
		return 0, err
	}
	total := 0
	for _, p := range q.parts {
		for max <= 0 || total < max {
			batch := redriveBatch
			if max > 0 {
				batch = min(batch, max-total)
			}
			n, err := Call(ctx, p, func(ctx context.Context) (int64, error) {
				return p.Store.Redrive(ctx, batch)
			}, nil)
			total += int(n)
			if err != nil {
				return total, fmt.Errorf("redrive %s: %w", q.Name(), err)
			}
			if int(n) < batch {
				break
			}
		}
	}
	return total, nil
}

// ScanLimit bounds how many entries a search for one ID reads.
const ScanLimit = 100_000

// RedriveID moves the dead letter id back to the queue, ready at once.
func (q *Queue) RedriveID(ctx context.Context, id string) error {
	for range 3 { // the list moves while it is read: look again a few times
		c, e, found, err := q.findIn(ctx, Dead, id)
		if err != nil {
			return fmt.Errorf("redrive %s from %s: %w", id, q.Name(), err)
		}
		if !found {
			break
		}
		moved, err := Call(ctx, c, func(ctx context.Context) (bool, error) {
			return c.Store.Requeue(ctx, e)
		}, nil)
		if err != nil {
			return fmt.Errorf("redrive %s from %s: %w", id, q.Name(), err)
		}
		if moved {
			return nil
		}
	}
	return fmt.Errorf("redrive %s: no dead letter with id %q: %w", q.Name(), id, ErrNotFound)
}

// findIn looks for item id in state st of each part (lookIn), and
// returns the part it is in.
func (q *Queue) findIn(ctx context.Context, st State, id string) (*part, Entry, bool, error) {
	for _, c := range q.lookIn(id) {
		e, found, err := c.find(ctx, st, id)
		if found || err != nil {
			return c, e, found, err
		}
	}
	return nil, Entry{}, false, nil
}

// find looks for item id in state st of c.
func (c *part) find(ctx context.Context, st State, id string) (Entry, bool, error) {
	type hit struct {
		e     Entry
		found bool
	}
	h, err := Call(ctx, c, func(ctx context.Context) (hit, error) {
		var e Entry
		var found bool
		var err error
		s := c.Store
		switch st {
		case Delayed:
			e, found, err = s.Get(ctx, id)
		case Inflight:
			e, found, err = s.Find(ctx, store.PartInflight, id, ScanLimit)
			if err == nil && !found {
				e, found, err = findClaimed(ctx, s, id)
			}
		default:
			e, found, err = s.Find(ctx, storePart(st), id, ScanLimit)
		}
		return hit{e, found}, err
	}, nil)
	return h.e, h.found, err
}

// findClaimed looks for item id among the claimed items.
func findClaimed(ctx context.Context, s *store.Partition, id string) (Entry, bool, error) {
	entries, err := s.ListClaimed(ctx, 0, MaxPage)
	if err != nil {
		return Entry{}, false, err
	}
	for _, e := range entries {
		if got, err := envelope.PeekID(e.Data); err == nil && got == id {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

// Find looks for item id in each of states in turn, and returns the first
// state it is in.
func (q *Queue) Find(ctx context.Context, id string, states ...State) (st State, e Entry, found bool, err error) {
	_, st, e, found, err = q.findPart(ctx, id, states...)
	return st, e, found, err
}

// findPart is Find, with the part the item is in.
func (q *Queue) findPart(ctx context.Context, id string, states ...State) (*part, State, Entry, bool, error) {
	for _, c := range q.lookIn(id) {
		for _, st := range states {
			e, found, err := c.find(ctx, st, id)
			if err != nil || found {
				return c, st, e, found, err
			}
		}
	}
	return nil, "", Entry{}, false, nil
}

// attempts bounds how often an operation looks for an item that moves
// between its lookup and its change.
const attempts = 3

// act finds item id in one of states and runs do on it, again when the
// item moved meanwhile (do returns false).
func (q *Queue) act(ctx context.Context, id string, states []State, do func(c *part, st State, e Entry) (bool, error)) error {
	var c *part
	var st State
	var e Entry
	for range attempts {
		var found bool
		var err error
		c, st, e, found, err = q.findPart(ctx, id, states...)
		if err != nil {
			return err
		}
		if !found {
			return noItem(id)
		}
		if done, err := do(c, st, e); err != nil || done {
			return err
		}
	}
	if st == Inflight && e.Key == "" {
		return fmt.Errorf("item %q is being handed to a consumer (claimed, not leased yet), try again: %w", id, ErrNotFound)
	}
	return fmt.Errorf("item %q moved each of the %d times it was found, try again: %w", id, attempts, ErrNotFound)
}

func noItem(id string) error {
	return fmt.Errorf("no item %q: %w", id, ErrNotFound)
}

func notIn(id string, st State, want string) error {
	return fmt.Errorf("item %q is %s, not %s: %w", id, st, want, ErrNotFound)
}

// Delete deletes item id, whatever its state.
func (q *Queue) Delete(ctx context.Context, id string) error {
	removed, err := q.Remove(ctx, id)
	if err != nil || removed {
		return err
	}
	return q.act(ctx, id, []State{Retry, Inflight, Ready, Dead}, func(c *part, st State, e Entry) (bool, error) {
		return Call(ctx, c, func(ctx context.Context) (bool, error) {
			s := c.Store
			switch st {
			case Retry:
				return s.DeleteRetry(ctx, e.Key)
			case Inflight:
				if e.Key == "" {
					return false, nil // claimed, about to be leased: look again
				}
				return s.DeleteLeased(ctx, e.Key)
			case Ready:
				return s.DeleteReady(ctx, e)
			default:
				return s.DeleteDead(ctx, e)
			}
		}, nil)
	})
}

// MoveAny moves item id, delayed or waiting for a retry, as m says.
func (q *Queue) MoveAny(ctx context.Context, id string, m Move) error {
	found, err := q.Reschedule(ctx, id, m)
	if err != nil || found {
		return err
	}
	return q.act(ctx, id, []State{Retry, Inflight, Ready, Dead}, func(c *part, st State, e Entry) (bool, error) {
		if st != Retry {
			return false, notIn(id, st, "delayed or retry")
		}
		o, err := Call(ctx, c, func(ctx context.Context) (store.RescheduleOutcome, error) {
			return c.Store.RescheduleRetry(ctx, e.Key, m)
		}, nil)
		return o != store.RescheduleNotFound, err
	})
}

// Requeue moves the dead letter id back to the queue, ready at once.
func (q *Queue) Requeue(ctx context.Context, id string) error {
	return q.act(ctx, id, []State{Dead, Delayed, Retry, Inflight, Ready}, func(c *part, st State, e Entry) (bool, error) {
		if st != Dead {
			return false, notIn(id, st, "dead")
		}
		return Call(ctx, c, func(ctx context.Context) (bool, error) {
			return c.Store.Requeue(ctx, e)
		}, nil)
	})
}
