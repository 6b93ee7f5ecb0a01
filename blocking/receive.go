package blocking

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/lua"
)

// Delivery is an item received with [Queue.Receive]: the value and its
// metadata, leased to the receiver until it calls Ack or Nack or the
// visibility timeout passes.
type Delivery[T any] struct {
	ID         string            // the item's ID (generated, or delayed.WithID)
	Value      T                 // the decoded value
	Attempt    int               // 1 on first delivery, +1 on each redelivery
	EnqueuedAt time.Time         // when it was first offered (Redis server clock)
	DueAt      time.Time         // when it became due (Redis server clock)
	Headers    map[string]string // metadata; HeaderError holds the last failure

	q     *Queue[T]
	token string
	env   envelope.Envelope
}

// Receive waits for the oldest ready item and leases it to the caller for
// the visibility timeout (WithVisibilityTimeout): delivery is at least once.
// Settle it with Ack when done, or Nack to retry later; if neither happens
// in time, the item becomes ready again with Attempt+1. When ctx ends,
// Receive returns ctx.Err() (test with errors.Is).
//
// Items that cannot be decoded are moved to the dead letters with the reason
// and logged; Receive goes on to the next one.
func (q *Queue[T]) Receive(ctx context.Context) (*Delivery[T], error) {
	ds, err := q.receive(ctx, 1)
	if err != nil {
		return nil, err
	}
	return ds[0], nil
}

// maxReceive bounds one receive script call (its results are unpacked).
const maxReceive = 256

// receive waits until it can lease at least one item, and leases up to max
// in one script call.
func (q *Queue[T]) receive(ctx context.Context, max int) ([]*Delivery[T], error) {
	if err := q.core.StartTransfer(); err != nil {
		return nil, err
	}
	cmdCtx := context.WithoutCancel(ctx) // see pop: never abandon a reply
	k := q.core.Keys
	start := time.Now()
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
		}
		res, err := lua.Receive.Run(cmdCtx, q.core.RDB,
			[]string{k.Ready, k.Leases, k.Inflight, k.Seq, k.DeadReady},
			q.core.Cfg.Visibility.Milliseconds(), min(max, maxReceive)).StringSlice()
		if errors.Is(err, redis.Nil) {
			if err := q.waitReady(cmdCtx, q.core.BlockFor(ctx)); err != nil {
				return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
		}
		if len(res)%2 != 0 {
			return nil, fmt.Errorf("receive %s: unexpected reply of %d values", q.Name(), len(res))
		}
		ds := make([]*Delivery[T], 0, len(res)/2)
		for i := 0; i < len(res); i += 2 {
			token, raw := res[i], res[i+1]
			if token == "" {
				q.core.Cfg.Logger.Warn("redelay: unreadable item moved to dead letters",
					"queue", q.Name(), "reason", raw, "dead_letter_list", k.DeadReady)
				continue
			}
			d, err := q.delivery(token, []byte(raw))
			if err != nil {
				q.buryUndecodable(cmdCtx, token, []byte(raw), err)
				continue
			}
			q.core.Tel.Received(ctx, start, d.ID, d.Attempt, d.DueAt, d.Headers)
			ds = append(ds, d)
		}
		if len(ds) > 0 {
			return ds, nil
		}
	}
}

// waitReady blocks (one short block at most) until the ready list holds an
// item, without taking it: BLMOVE from the list's tail to its tail is a
// no-op rotation that returns once an element exists.
func (q *Queue[T]) waitReady(ctx context.Context, block time.Duration) error {
	ready := q.core.Keys.Ready
	secs := strconv.FormatFloat(block.Seconds(), 'f', 3, 64)
	err := q.core.RDB.Do(ctx, "BLMOVE", ready, ready, "RIGHT", "RIGHT", secs).Err()
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

func (q *Queue[T]) delivery(token string, raw []byte) (*Delivery[T], error) {
	e, err := envelope.Unmarshal(raw)
	if err != nil {
		return nil, err
	}
	// A leased envelope counts the deliveries before this one.
	e.Attempt++
	d := &Delivery[T]{
		ID: e.ID, Attempt: e.Attempt, EnqueuedAt: e.EnqueuedAt, DueAt: e.DueAt,
		Headers: maps.Clone(e.Headers), q: q, token: token, env: e,
	}
	if err := q.core.Cfg.Codec.Unmarshal(e.Payload, &d.Value); err != nil {
		return nil, fmt.Errorf("item %s: decode with %s codec: %w", e.ID, q.core.Cfg.Codec.Name(), err)
	}
	return d, nil
}

// buryUndecodable dead-letters a leased item that Go cannot decode, with the
// reason in its headers when the envelope itself is readable.
func (q *Queue[T]) buryUndecodable(ctx context.Context, token string, raw []byte, reason error) {
	out, id := envelope.WithError(raw, reason.Error())
	log := q.core.Cfg.Logger.With("queue", q.Name(), "id", id, "reason", reason.Error())
	if _, err := q.settle(ctx, token, out, "dead", 0, id); err != nil {
		// The lease stays; the reclaimer makes the item ready again and the
		// next receiver tries once more, until its attempts run out.
		log.Error("redelay: undecodable item could not be dead-lettered", "err", err)
		return
	}
	q.core.Tel.DeadLettered(ctx, 1)
	log.Warn("redelay: undecodable item moved to dead letters")
}

// settle runs nack.lua: mode "retry" (due after delay) or "dead".
func (q *Queue[T]) settle(ctx context.Context, token string, env []byte, mode string, delay time.Duration, id string) (int64, error) {
	k := q.core.Keys
	return lua.Nack.Run(ctx, q.core.RDB,
		[]string{k.Leases, k.Inflight, k.Delayed, k.Items, k.Seq, k.Ready, k.DeadReady},
		token, env, mode, delay.Microseconds(), id, k.Wake).Int64()
}

// Ack marks the delivery done: the item is gone for good. It returns an
// error wrapping [ErrLeaseLost] if the lease was lost first (and then the
// item may be delivered again, or already was).
func (d *Delivery[T]) Ack(ctx context.Context) error {
	return d.q.ackAll(ctx, []*Delivery[T]{d})[0]
}

// ackAll acks deliveries of q in one round trip, and returns each one's
// result. Two plain commands per delivery, no script: removing the inflight
// entry is the ack; the lease entry is only an index, and one left behind
// by a crash between the two is dropped by the reclaimer.
func (q *Queue[T]) ackAll(ctx context.Context, ds []*Delivery[T]) []error {
	k := q.core.Keys
	ctx = context.WithoutCancel(ctx)
	dels := make([]*redis.IntCmd, len(ds))
	_, err := q.core.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range ds {
			dels[i] = p.HDel(ctx, k.Inflight, d.token)
			p.ZRem(ctx, k.Leases, d.token)
		}
		return nil
	})
	errs := make([]error, len(ds))
	acked := 0
	defer func() { q.core.Tel.Acked(ctx, acked) }()
	for i, d := range ds {
		switch {
		case dels[i].Err() != nil:
			errs[i] = fmt.Errorf("ack %s in %s: %w", d.ID, q.Name(), dels[i].Err())
		case err != nil && dels[i].Val() == 0:
			errs[i] = fmt.Errorf("ack %s in %s: %w", d.ID, q.Name(), err)
		case dels[i].Val() == 0:
			errs[i] = fmt.Errorf("ack %s in %s: %w", d.ID, q.Name(), ErrLeaseLost)
		default:
			acked++
		}
	}
	return errs
}

// Nack gives the item back: it becomes ready again after delay, and its
// next delivery has Attempt+1. If this was its last allowed attempt
// (WithMaxAttempts), it goes to the dead letters instead. [WithReason]
// records why. Returns an error wrapping [ErrLeaseLost] if the lease was
// lost first; nothing changes then.
func (d *Delivery[T]) Nack(ctx context.Context, delay time.Duration, opts ...NackOption) error {
	reason := "nacked"
	for _, opt := range opts {
		if opt != nil {
			opt(&reason)
		}
	}
	return d.nack(ctx, delay, reason)
}

// NackOption configures one Nack.
type NackOption func(reason *string)

// WithReason records why a delivery failed: err's text goes into the item's
// Headers[HeaderError], seen by its next receiver and kept in the dead
// letters if this was its last attempt. Default "nacked".
func WithReason(err error) NackOption {
	return func(reason *string) {
		if err != nil {
			*reason = err.Error()
		}
	}
}

func (d *Delivery[T]) nack(ctx context.Context, delay time.Duration, reason string) error {
	if delay < 0 {
		return fmt.Errorf("nack %s in %s: negative delay %v", d.ID, d.q.Name(), delay)
	}
	e := d.env
	e.Headers = withHeader(e.Headers, HeaderError, reason)
	mode := "retry"
	if d.Attempt >= d.q.core.Cfg.MaxAttempts {
		mode = "dead"
		e.Headers[HeaderError] = fmt.Sprintf("%s (attempt %d of %d)", reason, d.Attempt, d.q.core.Cfg.MaxAttempts)
	}
	n, err := d.q.settle(context.WithoutCancel(ctx), d.token, e.Marshal(), mode, delay, d.ID)
	if err != nil {
		return fmt.Errorf("nack %s in %s: %w", d.ID, d.q.Name(), err)
	}
	if n == lua.NackLeaseLost {
		return fmt.Errorf("nack %s in %s: %w", d.ID, d.q.Name(), ErrLeaseLost)
	}
	if n != lua.NackDead {
		d.q.core.Tel.Nacked(ctx)
	} else {
		d.q.core.Tel.DeadLettered(ctx, 1)
		d.q.core.Cfg.Logger.Warn("redelay: item dead-lettered after its last attempt",
			"queue", d.q.Name(), "id", d.ID, "attempt", d.Attempt, "error", reason)
	}
	return nil
}

// Extend keeps the item leased for d more from now (not added to the
// current deadline). Consume calls it for you while a handler runs. Returns
// an error wrapping [ErrLeaseLost] if the lease was already lost.
func (d *Delivery[T]) Extend(ctx context.Context, by time.Duration) error {
	if by <= 0 {
		return fmt.Errorf("extend %s in %s: non-positive duration %v", d.ID, d.q.Name(), by)
	}
	k := d.q.core.Keys
	n, err := lua.Extend.Run(context.WithoutCancel(ctx), d.q.core.RDB, []string{k.Leases, k.Inflight}, d.token, by.Milliseconds()).Int64()
	if err != nil {
		return fmt.Errorf("extend %s in %s: %w", d.ID, d.q.Name(), err)
	}
	if n == 0 {
		return fmt.Errorf("extend %s in %s: %w", d.ID, d.q.Name(), ErrLeaseLost)
	}
	return nil
}

func withHeader(h map[string]string, k, v string) map[string]string {
	h = maps.Clone(h)
	if h == nil {
		h = map[string]string{}
	}
	h[k] = v
	return h
}
