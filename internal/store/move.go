package store

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redelay/redelay/internal/lua"
)

// The move step: due items from the delayed set to the ready list, expired
// leases and claims back, and the moves of one item an operator asks for
// (reschedule, update, requeue, delete, redrive).

// Moved is the result of one Transfer call.
type Moved struct {
	N       int64 // items moved
	NextDue int64 // earliest pending due time, Unix µs; -1 when none
	NowUs   int64 // the server's clock
	Paused  bool  // the queue is paused (due items move all the same)
	// ScheduleDueMs is when the earliest recurring schedule needs its next
	// tick materialized (Unix ms); -1 when the queue has none.
	ScheduleDueMs int64
}

// Transfer moves up to batch due items to the ready list.
func (q *Partition) Transfer(ctx context.Context, batch int) (Moved, error) {
	k := q.K
	res, err := q.c.eval(ctx, lua.Transfer, []string{k.Delayed, k.Items, k.Ready, k.Retry, k.Meta, k.ScheduleDue, k.Prio, k.Seq}, batch).Int64Slice()
	if err != nil {
		return Moved{}, err
	}
	if len(res) != 6 {
		return Moved{}, fmt.Errorf("unexpected transfer reply %v", res)
	}
	return Moved{N: res[0], NextDue: res[1], NowUs: res[3], Paused: res[4] == 1, ScheduleDueMs: res[5]}, nil
}

// Reclaimed is the result of one Reclaim call.
type Reclaimed struct {
	Moved       int64 // expired leases made ready again
	NextLease   int64 // earliest lease deadline, Unix ms; -1 when none
	NowMs       int64 // the server's clock
	MaxAttempts int64
	GivenBack   int64    // items given back from the claimed list
	Dead        []string // IDs of items whose lease expired on their last attempt, dead-lettered
}

// Reclaim makes up to batch expired leases ready again (or dead-letters
// them after their last attempt) and gives back items stranded in the
// claimed list.
func (q *Partition) Reclaim(ctx context.Context, batch, fallbackMax int) (Reclaimed, error) {
	k := q.K
	res, err := q.c.eval(ctx, lua.Reclaim,
		[]string{k.Leases, k.Inflight, k.Ready, k.Meta, k.Claimed, k.Seen, k.DeadReady, k.Prio, k.Seq, k.History},
		batch, fallbackMax, ClaimedHold.Milliseconds()).Slice()
	if err != nil {
		return Reclaimed{}, err
	}
	if len(res) < 6 {
		return Reclaimed{}, fmt.Errorf("unexpected reclaim reply of %d values", len(res))
	}
	var r Reclaimed
	r.Moved, _ = res[0].(int64)
	r.NextLease, _ = res[1].(int64)
	r.NowMs, _ = res[2].(int64)
	r.MaxAttempts, _ = res[3].(int64)
	r.GivenBack, _ = res[4].(int64)
	for _, v := range res[6:] {
		id, _ := v.(string)
		r.Dead = append(r.Dead, id)
	}
	return r, nil
}

// Remove cancels the pending delayed item id.
func (q *Partition) Remove(ctx context.Context, id string) (bool, error) {
	k := q.K
	n, err := q.c.eval(ctx, lua.Remove, []string{k.Delayed, k.Items}, id).Int64()
	return n == 1, err
}

// ClearDelayed drops every pending delayed item (retries are kept).
func (q *Partition) ClearDelayed(ctx context.Context) error {
	return q.c.rdb.Unlink(ctx, q.K.Delayed, q.K.Items).Err()
}

// Redrive moves up to batch dead letters back to the ready list.
func (q *Partition) Redrive(ctx context.Context, batch int) (int64, error) {
	k := q.K
	return q.c.eval(ctx, lua.Redrive, []string{k.DeadReady, k.Ready, k.Prio, k.Seq, k.DeadPrio}, batch).Int64()
}

// Move says where Reschedule puts an item.
type Move struct {
	Mode byte  // 'd': due US µs from now; 'a': due at US (Unix µs); 'n': ready now
	US   int64 // the delay or due time, µs
}

// Reschedule moves the pending delayed item id to a new due time, or to
// the ready list (reschedule.lua).
func (q *Partition) Reschedule(ctx context.Context, id string, m Move) (RescheduleOutcome, error) {
	return q.reschedule(ctx, "id", id, m)
}

// RescheduleRetry moves the retry named by its exact member.
func (q *Partition) RescheduleRetry(ctx context.Context, member string, m Move) (RescheduleOutcome, error) {
	return q.reschedule(ctx, "member", member, m)
}

func (q *Partition) reschedule(ctx context.Context, by, key string, m Move) (RescheduleOutcome, error) {
	k := q.K
	mode, us := "now", ""
	if m.Mode != 'n' {
		mode, us = string(m.Mode), strconv.FormatInt(m.US, 10)
	}
	n, err := q.c.eval(ctx, lua.Reschedule, []string{k.Delayed, k.Items, k.Ready, k.Retry, k.Prio, k.Seq},
		k.Wake, by, key, mode, us).Int64()
	return RescheduleOutcome(n), err
}

// Update replaces the payload of the pending delayed item id (update.lua),
// when it and the item's producer headers fit limit bytes (0: no limit).
// It returns 1 updated, 0 not pending, or minus the size over the limit.
func (q *Partition) Update(ctx context.Context, id string, payload []byte, limit int) (int64, error) {
	return q.c.eval(ctx, lua.Update, []string{q.K.Items}, id, payload, max(limit, 0)).Int64()
}

// Requeue moves the dead letter e (from Find) back to the ready list
// (requeue.lua): by its member in the dead letters' priority set, or by
// its exact bytes in their list; false when it is no longer there.
func (q *Partition) Requeue(ctx context.Context, e Entry) (bool, error) {
	k := q.K
	n, err := q.c.eval(ctx, lua.Requeue, []string{k.DeadReady, k.Ready, k.Prio, k.Seq, k.DeadPrio}, e.Data, e.Key).Int64()
	return n == 1, err
}

// DeleteRetry drops the retry named by its exact member; false when it is
// no longer there.
func (q *Partition) DeleteRetry(ctx context.Context, member string) (bool, error) {
	n, err := q.c.rdb.ZRem(ctx, q.K.Retry, member).Result()
	return n == 1, err
}

// DeleteReady drops the ready item e (from ListReady or Find): by its
// member in the priority set, or by its exact bytes in the ready list;
// false when it is no longer there.
func (q *Partition) DeleteReady(ctx context.Context, e Entry) (bool, error) {
	if e.InGroup {
		n, err := q.c.eval(ctx, lua.GroupPurge, []string{q.K.Ready}, e.Group, e.Key).Int64()
		return n == 1, err
	}
	if e.Key != "" {
		n, err := q.c.rdb.ZRem(ctx, q.K.Prio, e.Key).Result()
		return n == 1, err
	}
	n, err := q.c.rdb.LRem(ctx, q.K.Ready, 1, e.Data).Result()
	return n == 1, err
}

// DeleteDead drops the dead letter e (from Find), as DeleteReady drops a
// ready item; false when it is no longer there.
func (q *Partition) DeleteDead(ctx context.Context, e Entry) (bool, error) {
	return q.c.Partition(q.K.Dead()).DeleteReady(ctx, e)
}

// DeleteLeased drops a leased item and its lease, atomically; false when
// the lease is gone. Its consumer's Ack or Nack then finds the lease lost.
func (q *Partition) DeleteLeased(ctx context.Context, token string) (bool, error) {
	n, err := q.c.eval(ctx, lua.Unlease, []string{q.K.Inflight, q.K.Leases, q.K.Meta}, token).Int64()
	return n == 1, err
}
