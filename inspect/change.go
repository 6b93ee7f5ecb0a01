package inspect

import (
	"context"
	"fmt"
	"time"

	iqueue "github.com/redelay/redelay/internal/queue"
)

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
	return in.change(ctx, "delete", queue, id, func(q *iqueue.Queue) error { return q.Delete(ctx, id) })
}

// Promote makes the delayed item or retry with this ID due now: it joins
// the ready list at once, behind the items already ready, with its due
// time set to now. A delayed item: O(log N), one round trip. A retry is
// found first (a scan of up to blocking.ScanLimit). An item in another
// state returns ErrNotFound naming the state it is in (found with Get's
// scans); so does an ID found nowhere.
func (in *Inspector) Promote(ctx context.Context, queue, id string) error {
	return in.change(ctx, "promote", queue, id, func(q *iqueue.Queue) error {
		return q.MoveAny(ctx, id, iqueue.Move{Mode: 'n'})
	})
}

// Reschedule moves the delayed item or retry with this ID to fall due at
// due (on the Redis server's clock), keeping its ID, value and headers.
// Costs and errors are Promote's; due before 1970 or after 2255 returns
// ErrInvalidArgument. So does a due time that passed more than a second
// ago by the server's clock (one round trip more), unless [AllowPast]
// asks for it: [Inspector.Promote] is the way to make an item ready now.
// With AllowPast, a time that has passed makes it ready at once when
// nothing pending is due before it.
func (in *Inspector) Reschedule(ctx context.Context, queue, id string, due time.Time, opts ...RescheduleOption) error {
	var o rescheduleOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := iqueue.CheckDue(due); err != nil {
		return wrap("reschedule", queue, err)
	}
	return in.change(ctx, "reschedule", queue, id, func(q *iqueue.Queue) error {
		if !o.allowPast {
			now, err := q.Now(ctx)
			if err != nil {
				return err
			}
			if err := iqueue.CheckNotPast(due, now); err != nil {
				return fmt.Errorf("%s: %w; promote makes it ready now", id, err)
			}
		}
		return q.MoveAny(ctx, id, iqueue.Move{Mode: 'a', US: due.UnixMicro()})
	})
}

// RescheduleOption configures one Reschedule.
type RescheduleOption func(*rescheduleOptions)

type rescheduleOptions struct{ allowPast bool }

// AllowPast lets Reschedule set a due time that has passed, which makes
// the item ready at once when nothing pending is due before it. Without
// it such a time is refused.
func AllowPast() RescheduleOption { return func(o *rescheduleOptions) { o.allowPast = true } }

// Requeue moves the dead letter with this ID back to the ready list, with
// its attempts reset, as blocking.Queue.RedriveID does. It reads the dead
// letters in take order, up to blocking.ScanLimit; when the item is not
// there, it looks in the other states (Get's scans) to name the one it is
// in, in an ErrNotFound. The entry found moves only if it is still there
// (else Requeue looks again, 3 times at most).
func (in *Inspector) Requeue(ctx context.Context, queue, id string) error {
	return in.change(ctx, "requeue", queue, id, func(q *iqueue.Queue) error { return q.Requeue(ctx, id) })
}

// change opens the queue of item id and runs do on it.
func (in *Inspector) change(ctx context.Context, op, queue, id string, do func(q *iqueue.Queue) error) error {
	q, _, err := in.openID(ctx, queue, id)
	if err == nil {
		err = do(q)
	}
	if err != nil {
		return wrap(op, queue, err)
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
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return 0, wrap("requeue all", queue, err)
	}
	n, err := q.Redrive(ctx, 0)
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
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return 0, wrap("purge", queue, err)
	}
	n, err := q.Purge(ctx, iqueue.State(st))
	if err != nil {
		return n, wrap("purge", queue, err)
	}
	return n, nil
}
