package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
)

// DefaultMaxAttempts applies when no process recorded a queue's limit.
const DefaultMaxAttempts = 10

// ClaimedHold is how long an item may sit in a queue's claimed list before
// the reclaimer gives it back to the ready list. It is far above the time a
// live consumer needs between its wait and its lease (a round trip), and
// above the time go-redis takes to resend a lost reply with default
// settings (about 4 × 3 s), which [Queue.Confirm]'s caller relies on. It
// must be the same in every process, so it is not configurable.
const ClaimedHold = 30 * time.Second

// LaneTTL is how long an offer call's outcome is kept for a resend of the
// same call to find: longer than go-redis's resends and a held packet.
const LaneTTL = 60 * time.Second

// Partition is the Redis side of one queue partition: its keys and every operation on
// them.
type Partition struct {
	c *Client
	K keys.Set
	// prio: this process has seen the queue's priority marker, so its
	// pops go through pop.lua (see Pop).
	prio atomic.Bool
	// ack: offers, acks and settlements wait for replicas (SetReplicaAck);
	// nil: they do not, and cost nothing more.
	ack *replicaAck
	// dead: q holds dead letters (SetDeadLetters).
	dead bool
}

// marker is PRIO_MARKER of prelude.lua: the ready list's tail while the
// queue's priority set holds items. It is no envelope (first byte 0).
const marker = "\x00"

// IsMarker reports whether b is the priority marker, which a blocking wait
// (WaitClaim) can return: the caller takes with TakeMarked instead.
func IsMarker(b []byte) bool { return len(b) == 1 && b[0] == 0 }

// Partition returns the operations on the queue partition with keys k.
func (c *Client) Partition(k keys.Set) *Partition { return &Partition{c: c, K: k} }

// Client returns the client q runs on.
func (q *Partition) Client() *Client { return q.c }

// SetDeadLetters marks q as a queue of dead letters, before its first use:
// its receives (Lease) lease every item, whatever deadline (WithTTL) it
// carries, since an item's deadline ends when it is dead-lettered.
func (q *Partition) SetDeadLetters() { q.dead = true }

// OfferItem is one item of an offer call.
type OfferItem struct {
	ID   string
	Env  []byte
	Mode byte  // 'd': due US µs from now; 'a': due at US (Unix µs); 'r': ready now
	US   int64 // the delay or due time, µs
}

// write runs a script that offers or settles: as eval does, or, with
// replica acknowledgement, followed by WAIT (werr wraps ErrNotReplicated
// when WAIT did not confirm the script's writes).
func (q *Partition) write(ctx context.Context, s *redis.Script, keys []string, args ...any) (cmd *redis.Cmd, werr error) {
	if q.ack == nil {
		return q.c.eval(ctx, s, keys, args...), nil
	}
	return q.replicatedEval(ctx, s, keys, args...)
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

// Pop removes and returns the next ready item without blocking: the
// oldest of the highest priority; nil when none. go-redis does not resend
// it: a resent pop would take a second item while the first one's reply is
// lost.
//
// A queue whose items all have priority 0 is popped with one RPOP. Once it
// meets the priority marker (the ready list's tail whenever the priority
// set holds items), q pops with pop.lua for good.
func (q *Partition) Pop(ctx context.Context) ([]byte, error) {
	if !q.prio.Load() {
		b, err := q.c.do(ctx, false, "rpop", q.K.Ready).Text()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if b != marker {
			return []byte(b), nil
		}
		q.prio.Store(true)
	}
	envs, err := q.popScript(ctx, 1, "")
	if err != nil || len(envs) == 0 {
		return nil, err
	}
	return envs[0], nil
}

// TakeMarked takes the next ready item for a blocking wait that returned
// the priority marker (the marker leaves the claimed list): nil when none
// is left. Not resent, like Pop.
func (q *Partition) TakeMarked(ctx context.Context) ([]byte, error) {
	q.prio.Store(true)
	envs, err := q.popScript(ctx, 1, marker)
	if err != nil || len(envs) == 0 {
		return nil, err
	}
	return envs[0], nil
}

// popScript runs pop.lua without resends.
func (q *Partition) popScript(ctx context.Context, n int, claimed string) ([][]byte, error) {
	k := q.K
	vals, err := q.c.evalOnce(ctx, lua.Pop, []string{k.Ready, k.Prio, k.Claimed}, n, claimed).StringSlice()
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

// WaitSlot blocks for at most block until a consumer under the queue's
// concurrency limit ends a lease (FreeSlots) and takes that wake-up: the
// caller then tries to lease again. Waiting writes nothing.
func (q *Partition) WaitSlot(ctx context.Context, block time.Duration) error {
	var err error
	if q.c.block > 0 {
		err = q.c.do(ctx, true, "blpop", q.K.Slots, secs(block)).Err()
	} else {
		err = q.c.rdb.BLPop(ctx, time.Second, q.K.Slots).Err()
	}
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// FreeSlots wakes up to n consumers waiting in WaitSlot: n leases ended.
// The list holds at most limit wake-ups (the concurrency limit), so ends
// that nobody waited for cost one spare try each, and it expires when
// unused.
func (q *Partition) FreeSlots(ctx context.Context, n, limit int) error {
	if n <= 0 {
		return nil
	}
	ones := make([]any, n)
	for i := range ones {
		ones[i] = "1"
	}
	_, err := q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.LPush(ctx, q.K.Slots, ones...)
		p.LTrim(ctx, q.K.Slots, 0, int64(limit-1))
		p.PExpire(ctx, q.K.Slots, time.Minute)
		return nil
	})
	return err
}

// Confirm takes a claimed item for good (Take): false when it is no longer
// in the claimed list. A resent Confirm finds nothing, so the caller tells
// "already taken by my first send" from "given back by the reclaimer" by
// how long ago it claimed the item (see ClaimedHold).
func (q *Partition) Confirm(ctx context.Context, env []byte) (bool, error) {
	n, err := q.c.do(ctx, true, "lrem", q.K.Claimed, 1, env).Int64()
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

// Leased is one entry of a Lease reply: a lease (Token set, Data the
// envelope), bytes moved to the dead letters (Token empty, Data why), or
// an item past its deadline moved to the dead letters (Expired, Data its
// ID).
type Leased struct {
	Token   string
	Data    []byte
	Expired bool
	// Start is how long after the reply the lease may start being
	// handled (Limits.Interval); 0 without a rate limit.
	Start time.Duration
}

// Limits are the fleet-wide limits of a Consume, applied by receive.lua.
type Limits struct {
	// Interval is the time between two delivery starts (WithRateLimit's
	// per/n), 0 for none; Ahead how far ahead of now starts are handed
	// out.
	Interval, Ahead time.Duration
	// Concurrency is the most leases the queue may hold at once
	// (WithGlobalConcurrency), 0 for none.
	Concurrency int
}

// Limited is Lease's error when a limit let nothing be leased (a claimed
// item went back to the head of the line): wait Wait (the rate limit), or
// for a lease to end (Full: the concurrency limit).
type Limited struct {
	Wait time.Duration
	Full bool
}

func (e *Limited) Error() string {
	if e.Full {
		return "store: every lease the concurrency limit allows is held"
	}
	return fmt.Sprintf("store: rate limited for %v", e.Wait)
}

// ErrPaused is returned by Lease when the queue is paused: nothing was
// leased, and the claimed item went back to the head of the ready list.
var ErrPaused = errors.New("store: queue paused")

// Lease runs receive.lua: leases up to max ready items for vis, with tokens
// prefix+index, claimed first when not nil. nil when nothing was ready;
// ErrPaused when the queue is paused. Items past their deadline go to the
// dead letters instead, unless q holds dead letters (SetDeadLetters).
func (q *Partition) Lease(ctx context.Context, vis time.Duration, max int, prefix string, claimed []byte, lim Limits) ([]Leased, error) {
	k := q.K
	if claimed == nil {
		claimed = []byte{}
	}
	deadlines := 1
	if q.dead {
		deadlines = 0
	}
	res, err := q.c.eval(ctx, lua.Receive, []string{k.Ready, k.Leases, k.Inflight, k.Claimed, k.DeadReady, k.Meta, k.Prio, k.Rate},
		vis.Milliseconds(), max, prefix, claimed, lim.Interval.Microseconds(), lim.Ahead.Microseconds(), lim.Concurrency, deadlines).StringSlice()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(res) == 1 && res[0] == "paused" {
		return nil, ErrPaused
	}
	if len(res) == 3 && res[0] == "limited" {
		us, _ := strconv.ParseInt(res[2], 10, 64)
		return nil, &Limited{Full: res[1] == "c", Wait: time.Duration(us) * time.Microsecond}
	}
	if len(res)%2 != 0 {
		return nil, fmt.Errorf("unexpected receive reply of %d values", len(res))
	}
	var start time.Duration // of the next lease
	if n := len(res); n >= 2 && res[n-2] == "@" {
		us, _ := strconv.ParseInt(res[n-1], 10, 64)
		start = time.Duration(us) * time.Microsecond
		res = res[:n-2]
	}
	out := make([]Leased, len(res)/2)
	for i := range out {
		out[i] = Leased{Token: res[2*i], Data: []byte(res[2*i+1])}
		switch out[i].Token {
		case "!":
			out[i].Token, out[i].Expired = "", true
		case "":
		default:
			out[i].Start = start
			start += lim.Interval
		}
	}
	return out, nil
}

// Ack removes leases in one round trip and reports, per token, whether it
// was still held. Removing the inflight entry is the ack; the lease entry
// is only an index, and one left behind by a crash between the two is
// dropped by the reclaimer.
//
// With replica acknowledgement a WAIT follows in the same round trip, and
// when it does not confirm the acks, each token's result comes with an
// error wrapping ErrNotReplicated.
func (q *Partition) Ack(ctx context.Context, tokens []string) ([]bool, []error) {
	if q.ack != nil {
		return q.ackReplicated(ctx, tokens)
	}
	k := q.K
	dels := make([]*redis.IntCmd, len(tokens))
	_, err := q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, t := range tokens {
			dels[i] = p.HDel(ctx, k.Inflight, t)
			p.ZRem(ctx, k.Leases, t)
		}
		return nil
	})
	held := make([]bool, len(tokens))
	errs := make([]error, len(tokens))
	for i, d := range dels {
		switch {
		case d.Err() != nil:
			errs[i] = d.Err()
		case err != nil && d.Val() == 0:
			errs[i] = err
		default:
			held[i] = d.Val() == 1
		}
	}
	return held, errs
}

// ackReplicated is Ack followed by WAIT on the same connection.
func (q *Partition) ackReplicated(ctx context.Context, tokens []string) ([]bool, []error) {
	k := q.K
	dels := make([]*redis.IntCmd, len(tokens))
	var wait *redis.IntCmd
	err := q.pipelineOnMaster(ctx, k.Inflight, func(p redis.Pipeliner, _ bool) []redis.Cmder {
		check := make([]redis.Cmder, len(tokens))
		for i, t := range tokens {
			dels[i] = p.HDel(ctx, k.Inflight, t)
			check[i] = dels[i]
			p.ZRem(ctx, k.Leases, t)
		}
		wait = q.ack.send(ctx, p)
		return check
	})
	held := make([]bool, len(tokens))
	errs := make([]error, len(tokens))
	var werr error
	if err == nil {
		werr = q.ack.check(wait)
	}
	for i, d := range dels {
		switch {
		case err != nil:
			errs[i] = err
		case d.Err() != nil:
			errs[i] = d.Err()
		default:
			held[i] = d.Val() == 1
			errs[i] = werr
		}
	}
	return held, errs
}

// Settle is one settle.lua call.
type Settle struct {
	Token       string        // lease token, or "" for an item that is not leased
	Env         []byte        // the item, when it is not leased
	Reason      string        // the failure, for the item's error header
	Dead        bool          // dead-letter now
	Delay       time.Duration // retry delay
	Attempt     int           // this delivery's number
	MaxAttempts int           // when the queue has none recorded
	Nonce       string        // retry-set nonce when Token is ""
}

// Settle runs settle.lua and returns its status (lua.Settle*) and the
// queue's max attempts; with replica acknowledgement, an error wrapping
// ErrNotReplicated comes with them when replicas did not confirm it.
func (q *Partition) Settle(ctx context.Context, s Settle) (outcome SettleOutcome, maxAttempts int64, err error) {
	k := q.K
	mode := "retry"
	if s.Dead {
		mode = "dead"
	}
	env := s.Env
	if env == nil {
		env = []byte{}
	}
	cmd, werr := q.write(ctx, lua.Settle,
		[]string{k.Leases, k.Inflight, k.Retry, k.Delayed, k.Ready, k.DeadReady, k.Meta, k.Prio, k.Seq},
		s.Token, env, s.Reason, s.Delay.Microseconds(), s.Attempt, k.Wake, s.MaxAttempts, s.Nonce, mode)
	res, err := cmd.Int64Slice()
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("unexpected settle reply %v", res)
	}
	return SettleOutcome(res[0]), res[1], werr
}

// Extend moves the deadlines of the leases named by tokens to now + by,
// in one call, and reports per token whether the lease was still held.
func (q *Partition) Extend(ctx context.Context, by time.Duration, tokens []string) ([]bool, error) {
	k := q.K
	args := make([]any, 1, 1+len(tokens))
	args[0] = by.Milliseconds()
	for _, t := range tokens {
		args = append(args, t)
	}
	res, err := q.c.eval(ctx, lua.Extend, []string{k.Leases, k.Inflight}, args...).Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(res) != len(tokens) {
		return nil, fmt.Errorf("%d results for %d leases", len(res), len(tokens))
	}
	held := make([]bool, len(res))
	for i, d := range res {
		held[i] = d > 0
	}
	return held, nil
}

// Release gives leased items back to the head of the ready list without
// counting an attempt, and returns how many were still held.
func (q *Partition) Release(ctx context.Context, tokens []string) (int64, error) {
	if len(tokens) == 0 {
		return 0, nil
	}
	k := q.K
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	return q.c.eval(ctx, lua.Release, []string{k.Leases, k.Inflight, k.Ready, k.Prio, k.Seq}, args...).Int64()
}

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
		[]string{k.Leases, k.Inflight, k.Ready, k.Meta, k.Claimed, k.Seen, k.DeadReady, k.Prio, k.Seq},
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

// ReadyLen is the number of ready items: the ready list's (less the
// priority marker at its tail) and the priority set's (size.lua, which
// counts as every count of ready items does).
func (q *Partition) ReadyLen(ctx context.Context) (int64, error) {
	return q.c.eval(ctx, lua.Size, []string{q.K.Ready, q.K.Prio}).Int64()
}

// DelayedLen is the number of pending delayed items (retries not counted).
func (q *Partition) DelayedLen(ctx context.Context) (int64, error) {
	return q.c.rdb.ZCard(ctx, q.K.Delayed).Result()
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

// SetMaxAttempts records the queue's limit, shared by every process, and
// returns the one recorded before (0 when none).
func (q *Partition) SetMaxAttempts(ctx context.Context, n int) (int64, error) {
	var prev *redis.StringCmd
	_, err := q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		prev = p.HGet(ctx, q.K.Meta, keys.MetaMaxAttempts)
		p.HSet(ctx, q.K.Meta, keys.MetaMaxAttempts, n)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return 0, err
	}
	s, err := prev.Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
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
