package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
)

// The claim step: ready items out of the ready list into the claimed list
// (or popped outright, at-most-once), then confirmed, unclaimed, given back
// or dead-lettered.

// ClaimedHold is how long an item may sit in a queue's claimed list before
// the reclaimer gives it back to the ready list. It is far above the time a
// live consumer needs between its wait and its lease (a round trip), and
// above the time go-redis takes to resend a lost reply with default
// settings (about 4 × 3 s), which [Partition.Confirm]'s caller relies on. It
// must be the same in every process, so it is not configurable.
const ClaimedHold = 30 * time.Second

// TakeMarked takes the next ready item for a blocking wait that returned
// the priority marker or a group's turn (raw, see IsMarker; it leaves the
// claimed list): nil when none is left. Not resent, like PopN.
func (q *Partition) TakeMarked(ctx context.Context, raw []byte) ([]byte, error) {
	envs, err := q.popScript(ctx, 1, string(raw))
	if err != nil || len(envs) == 0 {
		return nil, err
	}
	return envs[0], nil
}

// popScript runs pop.lua without resends.
func (q *Partition) popScript(ctx context.Context, n int, claimed string) ([][]byte, error) {
	k := q.K
	deadlines := 1
	if q.dead {
		deadlines = 0
	}
	vals, err := q.c.evalOnce(ctx, lua.Pop, []string{k.Ready, k.Prio, k.Claimed, k.Meta, k.History}, n, claimed, deadlines).StringSlice()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}

// WaitClaim blocks for at most block until an item is ready, then moves
// the oldest one to the claimed list and returns it (nil after the block
// with nothing ready). Waiting writes nothing, and Redis hands each item to
// one waiting client. An item whose reply is lost stays in the claimed list
// until the reclaimer gives it back (ClaimedHold): nothing is lost.
func (q *Partition) WaitClaim(ctx context.Context, block time.Duration) ([]byte, error) {
	k := q.K
	var b string
	var err error
	if q.c.block > 0 {
		b, err = q.c.do(ctx, true, "blmove", k.Ready, k.Claimed, "RIGHT", "LEFT", secs(block)).Text()
	} else {
		// The client's read timeout is too short for a block through Do,
		// whose reply must come within it; go-redis gives a typed blocking
		// command the block plus 10 s. Such commands take whole seconds.
		b, err = q.c.rdb.BLMove(ctx, k.Ready, k.Claimed, "RIGHT", "LEFT", time.Second).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []byte(b), nil
}

// Confirm takes a claimed item for good (Take): false when it is no longer
// in the claimed list. A resent Confirm finds nothing, so the caller tells
// "already taken by my first send" from "given back by the reclaimer" by
// how long ago it claimed the item (see ClaimedHold).
func (q *Partition) Confirm(ctx context.Context, env []byte) (bool, error) {
	k := q.K
	n, err := q.c.eval(ctx, lua.Confirm, []string{k.Claimed, k.Meta, k.History}, env).Int64()
	return n == 1, err
}

// Unclaim gives a claimed item back to the head of the ready list.
func (q *Partition) Unclaim(ctx context.Context, env []byte) (bool, error) {
	k := q.K
	n, err := q.c.eval(ctx, lua.Unclaim, []string{k.Claimed, k.Ready, k.Prio, k.Seq}, env).Int64()
	return n == 1, err
}

// PushBack puts popped items back first in line, each where its priority
// sends it (giveback.lua); envs[0] is taken first.
func (q *Partition) PushBack(ctx context.Context, envs ...[]byte) error {
	if len(envs) == 0 {
		return nil
	}
	k := q.K
	args := make([]any, len(envs))
	for i, e := range envs {
		args[len(envs)-1-i] = e
	}
	return q.c.eval(ctx, lua.GiveBack, []string{k.Ready, k.Prio, k.Seq}, args...).Err()
}

// DeadLetter appends raw bytes to the dead letters as they are.
func (q *Partition) DeadLetter(ctx context.Context, raw []byte) error {
	return q.c.do(ctx, true, "lpush", q.K.DeadReady, raw).Err()
}

// PopN removes and returns up to n of the next ready items without
// blocking, in take order: the oldest of the highest priority first; nil
// when none. They count as processed (pop.lua). go-redis does not resend
// it: a resent pop would take more items while the first one's reply is
// lost.
func (q *Partition) PopN(ctx context.Context, n int) ([][]byte, error) {
	return q.popScript(ctx, n, "")
}
