package blocking

import (
	"context"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/queue"
)

// WithGroup puts the item in group key (a tenant, an account, a document):
// Take, Receive and Consume serve the groups that have ready items
// round-robin, one item per group per turn, so one group with a large
// backlog does not hold back the others. Items without a group behave as
// before until the queue has had a grouped item; from then on they take
// their turn together, as the group "" of their own. Within a group, items
// come in the usual order: priority first (WithPriority), then the order
// they became ready. On a queue of several partitions (WithPartitions) a
// group lives in the partition of its key, so its limits stay exact.
//
// [WithGroupConcurrency] and [WithGroupRateLimit] bound what one group has
// in flight and how fast its deliveries start, across every process.
// A key must be 1 to [MaxGroupLen] bytes of UTF-8, else the offer returns
// [ErrInvalidArgument]. See the README, "Groups".
func WithGroup(key string) OfferOption {
	return func(o *offerOptions) { o.r.Group, o.r.HasGroup = key, true }
}

// MaxGroupLen bounds a group's key (WithGroup), in bytes.
const MaxGroupLen = queue.MaxGroupLen

// WithGroupConcurrency makes at most n items of one group (WithGroup) in
// flight (leased) at once, across every process and every partition; n = 1
// gives strict order within a group: an item of a group is leased only once
// the previous one is settled (acked, nacked, dead-lettered, or its lease
// expired). A group at its limit is left out of the round at no cost (no
// polling): its turn comes back when one of its items settles.
//
// The limit is the queue's: Consume records it in Redis, and every Receive
// and ReceiveBatch of the queue, in any process, obeys it from then on,
// until a Consume records another. Take delivers items for good, so it
// holds nothing in flight and never brings a group to its limit; but a
// group at its limit (leases of Receive or Consume) waits for Take too.
// Default: none; n at least 1.
func WithGroupConcurrency(n int) ConsumeOption {
	return func(o *consumeOptions) {
		if n < 1 {
			o.fail(fmt.Errorf("WithGroupConcurrency(%d): must be at least 1", n))
			return
		}
		o.limits.SetGroups = true
		o.limits.GroupConcurrency = n
	}
}

// WithGroupRateLimit starts at most n deliveries per per of one group
// (WithGroup), across every process: one every per/n, spread evenly like
// [WithRateLimit]. A group that just started a delivery leaves the round
// until its next start is allowed; the transfer of the queue puts it back
// then (on a timer, not by polling). Recorded in Redis like
// [WithGroupConcurrency], and obeyed by Receive and ReceiveBatch too.
// Default: none; n at least 1, per at least 1 ms, per/n at least 1 µs.
func WithGroupRateLimit(n int, per time.Duration) ConsumeOption {
	return func(o *consumeOptions) {
		if n < 1 || per < time.Millisecond || per/time.Duration(n) < time.Microsecond {
			o.fail(fmt.Errorf("WithGroupRateLimit(%d, %v): want n >= 1, per >= 1ms, per/n >= 1µs", n, per))
			return
		}
		o.limits.SetGroups = true
		o.limits.GroupInterval = per / time.Duration(n)
	}
}

// GroupInfo is one group's counts (Groups).
type GroupInfo struct {
	Key      string // the group's key ("" for items offered without a group)
	Ready    int64  // ready to deliver
	InFlight int64  // leased, not yet settled
	Paused   bool   // PauseGroup
}

// Groups lists up to limit of the queue's groups that hold ready or
// in-flight items, from offset, largest (ready + in flight) first. A group
// with no item is not listed: it takes no memory in Redis.
func (q *Queue[T]) Groups(ctx context.Context, offset, limit int) ([]GroupInfo, error) {
	gs, err := q.q.Groups(ctx, offset, limit)
	if err != nil {
		return nil, fmt.Errorf("groups %s: %w", q.Name(), err)
	}
	out := make([]GroupInfo, len(gs))
	for i, g := range gs {
		out[i] = GroupInfo(g)
	}
	return out, nil
}

// PauseGroup stops every process from handing out the items of group key;
// the other groups go on. Items of the group go on becoming ready, and its
// leases run on. The flag lives in Redis until ResumeGroup.
func (q *Queue[T]) PauseGroup(ctx context.Context, key string) error {
	if err := q.q.SetGroupPaused(ctx, key, true); err != nil {
		return fmt.Errorf("pause group %s: %w", q.Name(), err)
	}
	return nil
}

// ResumeGroup undoes PauseGroup: the group takes its turn again at once.
// Resuming a group that is not paused is harmless.
func (q *Queue[T]) ResumeGroup(ctx context.Context, key string) error {
	if err := q.q.SetGroupPaused(ctx, key, false); err != nil {
		return fmt.Errorf("resume group %s: %w", q.Name(), err)
	}
	return nil
}

// PurgeGroup drops the ready items of group key and returns how many; its
// items in flight, delayed or waiting to retry stay.
func (q *Queue[T]) PurgeGroup(ctx context.Context, key string) (int64, error) {
	n, err := q.q.PurgeGroup(ctx, key)
	if err != nil {
		return n, fmt.Errorf("purge group %s: %w", q.Name(), err)
	}
	return n, nil
}
