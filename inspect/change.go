package inspect

import (
	"context"
	"fmt"
	"time"

	iqueue "github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
)

// attempts bounds how many times a change looks for an item again when
// the entry it found moved before the change reached it.
const attempts = 3

// act finds the item id in states and applies do to the entry found. do
// reports false when the entry was no longer there (it moved meanwhile):
// act then looks again, attempts times at most.
func (in *Inspector) act(ctx context.Context, q *store.Queue, id string, states []State, do func(hit) (bool, error)) error {
	var h hit
	for range attempts {
		var found bool
		var err error
		h, found, err = in.locate(ctx, q, id, states...)
		if err != nil {
			return err
		}
		if !found {
			return noItem(id)
		}
		if done, err := do(h); err != nil || done {
			return err
		}
	}
	if h.state == Inflight && h.e.Key == "" {
		return fmt.Errorf("item %q is being handed to a consumer (claimed, not leased yet), try again: %w", id, ErrNotFound)
	}
	return fmt.Errorf("item %q moved each of the %d times it was found, try again: %w", id, attempts, ErrNotFound)
}

// notIn is the error for an item found in a state the change does not
// apply to.
func notIn(id string, st State, want string) error {
	return fmt.Errorf("item %q is %s, not %s: %w", id, st, want, ErrNotFound)
}

// Delete drops the item with this ID, wherever it is: a delayed item by ID
// (O(log N), one round trip), else the item found as Get finds it (a scan
// of up to blocking.ScanLimit entries per state), deleted only if that
// exact entry is still there (else it looks again, 3 times at most).
//
// Deleting an in-flight item drops its lease, and its handler's work is
// not undone. Its consumer's Extend (Consume extends while the handler
// runs) returns blocking.ErrLeaseLost. Its Ack or Nack returns nil until
// the lease would have expired, ErrLeaseLost after: a lease found gone
// before its deadline is, to the consumer, its own earlier settlement
// resent after a lost reply. Either way the item stays deleted. An item
// being handed to a consumer (claimed, not leased yet) is looked for
// again until it is leased. ErrNotFound when no item has this ID.
func (in *Inspector) Delete(ctx context.Context, queue, id string) error {
	q, _, err := in.openID(ctx, queue, id)
	if err != nil {
		return wrap("delete", queue, err)
	}
	removed, err := q.Remove(ctx, id)
	if err == nil && !removed {
		err = in.act(ctx, q, id, []State{Retry, Inflight, Ready, Dead}, func(h hit) (bool, error) {
			switch h.state {
			case Retry:
				return q.DeleteRetry(ctx, h.e.Key)
			case Inflight:
				if h.e.Key == "" {
					return false, nil // claimed, about to be leased: look again
				}
				return q.DeleteLeased(ctx, h.e.Key)
			case Ready:
				return q.DeleteReady(ctx, h.e)
			default:
				return q.DeleteDead(ctx, h.e)
			}
		})
	}
	if err != nil {
		return wrap("delete", queue, err)
	}
	return nil
}

// Promote makes the delayed item or retry with this ID due now: it joins
// the ready list at once, behind the items already ready, with its due
// time set to now. A delayed item: O(log N), one round trip. A retry is
// found first (a scan of up to blocking.ScanLimit). An item in another
// state returns ErrNotFound naming the state it is in (found with Get's
// scans); so does an ID found nowhere.
func (in *Inspector) Promote(ctx context.Context, queue, id string) error {
	return in.move(ctx, "promote", queue, id, store.Move{Mode: 'n'})
}

// Reschedule moves the delayed item or retry with this ID to fall due at
// due (on the Redis server's clock), keeping its ID, value and headers. A
// time that has passed makes it ready at once when nothing pending is due
// before it. Costs and errors are Promote's; due before 1970 or after 2255
// returns ErrInvalidArgument.
func (in *Inspector) Reschedule(ctx context.Context, queue, id string, due time.Time) error {
	if err := iqueue.CheckDue(due); err != nil {
		return wrap("reschedule", queue, err)
	}
	return in.move(ctx, "reschedule", queue, id, store.Move{Mode: 'a', US: due.UnixMicro()})
}

// move moves a delayed item or a retry (Promote, Reschedule).
func (in *Inspector) move(ctx context.Context, op, queue, id string, m store.Move) error {
	q, _, err := in.openID(ctx, queue, id)
	if err != nil {
		return wrap(op, queue, err)
	}
	st, err := q.Reschedule(ctx, id, m)
	if err == nil && st == store.RescheduleNotFound {
		err = in.act(ctx, q, id, []State{Retry, Inflight, Ready, Dead}, func(h hit) (bool, error) {
			if h.state != Retry {
				return false, notIn(id, h.state, "delayed or retry")
			}
			st, err := q.RescheduleRetry(ctx, h.e.Key, m)
			return st != store.RescheduleNotFound, err
		})
	}
	if err != nil {
		return wrap(op, queue, err)
	}
	return nil
}

// Requeue moves the dead letter with this ID back to the ready list, with
// its attempts reset, as blocking.Queue.RedriveID does. It reads the dead
// letters in take order, up to blocking.ScanLimit; when the item is not
// there, it looks in the other states (Get's scans) to name the one it is
// in, in an ErrNotFound. The entry found moves only if it is still there
// (else Requeue looks again, 3 times at most).
func (in *Inspector) Requeue(ctx context.Context, queue, id string) error {
	q, _, err := in.openID(ctx, queue, id)
	if err == nil {
		err = in.act(ctx, q, id, []State{Dead, Delayed, Retry, Inflight, Ready}, func(h hit) (bool, error) {
			if h.state != Dead {
				return false, notIn(id, h.state, "dead")
			}
			return q.Requeue(ctx, h.e)
		})
	}
	if err != nil {
		return wrap("requeue", queue, err)
	}
	return nil
}

// RequeueAll moves every dead letter of the queue back to its ready list,
// in take order, with its attempt counter reset, as blocking's Redrive
// does: in batches of a few hundred, each batch one atomic script call, so
// a letter dead-lettered while it runs may move too. Each item keeps its
// priority. It returns how many moved, also with an error (the batches
// before it moved).
func (in *Inspector) RequeueAll(ctx context.Context, queue string) (int64, error) {
	t, err := in.open(ctx, queue)
	if err != nil {
		return 0, wrap("requeue all", queue, err)
	}
	n, err := in.typed(queue, t).Redrive(ctx, 0)
	if err != nil {
		return int64(n), wrap("requeue all", queue, err)
	}
	return int64(n), nil
}

// Purge drops every item of the queue in state st, atomically, and
// returns how many there were; Redis frees the memory in the background
// (UNLINK), so a large purge does not block it. Items arriving in that
// state after the call stay. Two round trips, O(1) on the server's main
// thread.
//
// Purging Inflight drops every lease and the items being handed to
// consumers, and nothing is delivered again; their consumers see what
// Delete of an in-flight item makes them see (Extend returns
// blocking.ErrLeaseLost; Ack and Nack return nil until the lease would
// have expired).
func (in *Inspector) Purge(ctx context.Context, queue string, st State) (int64, error) {
	if err := st.check(); err != nil {
		return 0, wrap("purge", queue, err)
	}
	t, err := in.open(ctx, queue)
	if err != nil {
		return 0, wrap("purge", queue, err)
	}
	var total int64
	for _, q := range t.parts { // one unless the queue has partitions
		n, err := q.Purge(ctx, part(st))
		total += n
		if err != nil {
			return total, wrap("purge", queue, err)
		}
	}
	return total, nil
}

// part is the store's part holding the items in state st (a valid state).
func part(st State) store.Part {
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
