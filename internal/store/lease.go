package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
)

// The lease step: claimed or ready items leased under client-chosen tokens,
// then acked, settled, extended or released; the fleet-wide concurrency
// slots and the attempt limit that leases obey.

// DefaultMaxAttempts applies when no process recorded a queue's limit.
const DefaultMaxAttempts = 10

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
	// SetGroups: GroupConcurrency and GroupInterval are the queue's group
	// limits (WithGroupConcurrency, WithGroupRateLimit), recorded for every
	// process; without it the recorded ones apply.
	SetGroups bool
	// GroupConcurrency is the most leases of one group at once, 0 for
	// none; GroupInterval the time between two delivery starts of one
	// group, 0 for none.
	GroupConcurrency int
	GroupInterval    time.Duration
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
	setGroups := 0
	if lim.SetGroups {
		setGroups = 1
	}
	res, err := q.c.eval(ctx, lua.Receive, []string{k.Ready, k.Leases, k.Inflight, k.Claimed, k.DeadReady, k.Meta, k.Prio, k.Rate},
		vis.Milliseconds(), max, prefix, claimed, lim.Interval.Microseconds(), lim.Ahead.Microseconds(), lim.Concurrency, deadlines,
		setGroups, lim.GroupConcurrency, lim.GroupInterval.Microseconds()).StringSlice()
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
	k := q.K
	args := make([]any, len(tokens))
	for i, t := range tokens {
		args[i] = t
	}
	cmd, werr := q.write(ctx, lua.Ack, []string{k.Leases, k.Inflight, k.Meta, k.History}, args...)
	res, err := cmd.Int64Slice()
	held := make([]bool, len(tokens))
	errs := make([]error, len(tokens))
	for i := range tokens {
		switch {
		case err != nil:
			errs[i] = err
		case i < len(res):
			held[i] = res[i] == 1
			errs[i] = werr
		default:
			errs[i] = fmt.Errorf("ack reply of %d results for %d tokens", len(res), len(tokens))
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
		[]string{k.Leases, k.Inflight, k.Retry, k.Delayed, k.Ready, k.DeadReady, k.Meta, k.Prio, k.Seq, k.History},
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

// LeaseCount is the number of leases (what ListLeased pages through). O(1).
func (q *Partition) LeaseCount(ctx context.Context) (int64, error) {
	return q.c.rdb.ZCard(ctx, q.K.Leases).Result()
}

// SetDeadBounds records the queue's dead-letter bounds in its meta hash:
// at most max dead letters, none older than maxAge; 0 removes a bound.
func (q *Partition) SetDeadBounds(ctx context.Context, max int64, maxAge time.Duration) error {
	return q.setMetaInts(ctx, []metaInt{{keys.MetaDeadMax, max}, {keys.MetaDeadMaxAge, maxAge.Milliseconds()}})
}

// metaInt is a setting of the meta hash; 0 or less: none.
type metaInt struct {
	field string
	v     int64
}

// setMetaInts records settings in the meta hash in one round trip, and
// deletes those of none.
func (q *Partition) setMetaInts(ctx context.Context, fs []metaInt) error {
	_, err := q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, f := range fs {
			if f.v > 0 {
				p.HSet(ctx, q.K.Meta, f.field, f.v)
			} else {
				p.HDel(ctx, q.K.Meta, f.field)
			}
		}
		return nil
	})
	return err
}
