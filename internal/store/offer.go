package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
)

// The offer step: items into the delayed set or the ready list, with their
// duplicate checks and bounds, recorded under a nonce so that a resent call
// is answered, not applied twice.

// LaneTTL is how long an offer call's outcome is kept for a resend of the
// same call to find: longer than go-redis's resends and a held packet.
const LaneTTL = 60 * time.Second

// OfferItem is one item of an offer call.
type OfferItem struct {
	ID   string
	Env  []byte
	Mode byte  // 'd': due US µs from now; 'a': due at US (Unix µs); 'r': ready now; see Generated
	US   int64 // the delay or due time, µs
}

// Generated returns the mode of a delayed item ('d', 'a') whose ID the
// client generated ('D', 'A'): no pending item can hold it, so offer.lua
// does not look for one. Other modes are returned as they are.
func Generated(mode byte) byte {
	switch mode {
	case 'd':
		return 'D'
	case 'a':
		return 'A'
	}
	return mode
}

// Offer runs offer.lua for items as one call recorded under lane with
// nonce, and returns one status per item (lua.Offer*). bound is the
// queue's bound (0: none): each item that does not fit is refused
// (lua.OfferFull). With replica acknowledgement, an error wrapping
// ErrNotReplicated comes with the statuses: the call ran on the master.
func (q *Partition) Offer(ctx context.Context, lane, nonce string, bound int64, items []OfferItem) ([]OfferStatus, error) {
	cmd, werr := q.write(ctx, lua.Offer, q.offerKeys(lane, 0, ""), q.offerArgs(nonce, bound, 0, 0, items)...)
	res, err := cmd.Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(res) != len(items) {
		return nil, fmt.Errorf("%d statuses for %d offers", len(res), len(items))
	}
	return statuses(res), werr
}

// offerKeys are offer.lua's keys for a call on lane, of a bounded batch
// with pass when batch > 0.
func (q *Partition) offerKeys(lane string, batch int, pass string) []string {
	k := q.K
	passKey := k.Meta // any key of the queue: unused without a batch
	if batch > 0 {
		passKey = k.Pass(pass)
	}
	return []string{k.Delayed, k.Items, k.Seq, k.Ready, k.Retry, k.Lane(lane), k.Prio, passKey}
}

// offerArgs are offer.lua's arguments (see OfferCall for the bound's).
func (q *Partition) offerArgs(nonce string, bound int64, batch, offset int, items []OfferItem) []any {
	argv := make([]any, 6, 6+4*len(items))
	argv[0], argv[1], argv[2] = q.K.Wake, nonce, LaneTTL.Milliseconds()
	argv[3], argv[4], argv[5] = bound, batch, offset
	for _, it := range items {
		argv = append(argv, it.ID, it.Env, string(it.Mode), it.US)
	}
	return argv
}

// Duplicate modes of Upsert (upsert.lua).
const (
	DupReplace  = 'R'
	DupDebounce = 'B'
	DupUnique   = 'U'
)

// Upsert offers one delayed item (Mode 'd' or 'a') under a duplicate mode,
// recorded under lane with nonce; us is the debounce's max wait or the
// unique window, µs; bound is the queue's bound (0: none). It returns
// upsert.lua's status, with an error wrapping ErrNotReplicated when
// replicas did not confirm it.
func (q *Partition) Upsert(ctx context.Context, lane, nonce string, it OfferItem, dup byte, us, bound int64) (OfferStatus, error) {
	k := q.K
	cmd, werr := q.write(ctx, lua.Upsert,
		[]string{k.Delayed, k.Items, k.Seq, k.Ready, k.Retry, k.Lane(lane), k.Unique(it.ID), k.Prio},
		k.Wake, nonce, LaneTTL.Milliseconds(), it.ID, it.Env, string(it.Mode), it.US, string(dup), us, bound)
	st, err := cmd.Int64()
	if err != nil {
		return 0, err
	}
	return OfferStatus(st), werr
}

// OfferCall is one offer.lua call of a pipelined batch.
type OfferCall struct {
	Lane, Nonce string
	Items       []OfferItem
	// Bound is the queue's bound (0: none). With Batch > 0 the calls are a
	// batch of Batch items that fits the bound as a whole or not at all:
	// Offset is how many of its items come before this call's, and Pass
	// names the key the first call leaves for the others (one per batch).
	Bound         int64
	Batch, Offset int
	Pass          string
	Statuses      []OfferStatus // set by OfferPipelined
	Err           error         // set by OfferPipelined
}

// OfferPipelined sends calls in one round trip; with atomic, in one
// MULTI/EXEC transaction (a bounded batch: its calls must run together).
// A pipeline sends only EVALSHA: calls the server answers with NOSCRIPT
// (first use, restart, failover) did nothing, so the script is loaded and
// they are sent again. Each call's result is in its Statuses or Err. With
// replica acknowledgement, one WAIT follows the calls (it covers every
// earlier write of the connection); when it does not confirm them, each
// call that ran has its Statuses and an Err wrapping ErrNotReplicated.
func (q *Partition) OfferPipelined(ctx context.Context, calls []*OfferCall, atomic bool) {
	if q.ack != nil {
		q.offerPipelinedReplicated(ctx, calls, atomic)
		return
	}
	send := func(calls []*OfferCall) []*redis.Cmd {
		pipe := q.c.rdb.Pipeline()
		if atomic {
			pipe = q.c.rdb.TxPipeline()
		}
		cmds := make([]*redis.Cmd, len(calls))
		for i, c := range calls {
			cmds[i] = lua.Offer.EvalSha(ctx, pipe, q.offerKeys(c.Lane, c.Batch, c.Pass), q.offerArgs(c.Nonce, c.Bound, c.Batch, c.Offset, c.Items)...)
		}
		_, _ = pipe.Exec(ctx) // errors are read per command
		return cmds
	}
	cmds := send(calls)
	var missing []*OfferCall
	var missingAt []int
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			missing = append(missing, calls[i])
			missingAt = append(missingAt, i)
		}
	}
	if len(missing) > 0 {
		if err := lua.Offer.Load(ctx, q.c.rdb).Err(); err != nil {
			for _, c := range missing {
				c.Err = fmt.Errorf("load script: %w", err)
			}
		} else {
			for j, cmd := range send(missing) {
				cmds[missingAt[j]] = cmd
			}
		}
	}
	for i, c := range calls {
		if c.Err != nil {
			continue
		}
		var res []int64
		res, c.Err = cmds[i].Int64Slice()
		c.Statuses = statuses(res)
		if c.Err == nil && len(c.Statuses) != len(c.Items) {
			c.Err = fmt.Errorf("%d statuses for %d offers", len(c.Statuses), len(c.Items))
		}
	}
}

// offerPipelinedReplicated is OfferPipelined with a WAIT after the calls.
// With atomic, the calls go in MULTI/EXEC and WAIT after EXEC (WAIT does
// not block inside a transaction).
func (q *Partition) offerPipelinedReplicated(ctx context.Context, calls []*OfferCall, atomic bool) {
	cmds := make([]*redis.Cmd, len(calls))
	scripts := func(p redis.Pipeliner, whole bool) []redis.Cmder {
		check := make([]redis.Cmder, len(calls))
		for i, c := range calls {
			keys, args := q.offerKeys(c.Lane, c.Batch, c.Pass), q.offerArgs(c.Nonce, c.Bound, c.Batch, c.Offset, c.Items)
			if whole {
				cmds[i] = lua.Offer.Eval(ctx, p, keys, args...)
			} else {
				cmds[i] = lua.Offer.EvalSha(ctx, p, keys, args...)
			}
			check[i] = cmds[i]
		}
		return check
	}
	var wait *redis.IntCmd
	var err error
	if atomic {
		wait, err = q.txOnMaster(ctx, q.K.Delayed, scripts)
	} else {
		err = q.pipelineOnMaster(ctx, q.K.Delayed, func(p redis.Pipeliner, whole bool) []redis.Cmder {
			check := scripts(p, whole)
			wait = q.ack.send(ctx, p)
			return check
		})
	}
	var werr error
	if err == nil {
		werr = q.ack.check(wait)
	}
	for i, c := range calls {
		if err != nil {
			c.Err = err
			continue
		}
		var res []int64
		res, c.Err = cmds[i].Int64Slice()
		c.Statuses = statuses(res)
		switch {
		case c.Err != nil:
		case len(c.Statuses) != len(c.Items):
			c.Err = fmt.Errorf("%d statuses for %d offers", len(c.Statuses), len(c.Items))
		default:
			c.Err = werr
		}
	}
}

// statuses types offer.lua's reply.
func statuses(res []int64) []OfferStatus {
	if res == nil {
		return nil
	}
	out := make([]OfferStatus, len(res))
	for i, r := range res {
		out[i] = OfferStatus(r)
	}
	return out
}
