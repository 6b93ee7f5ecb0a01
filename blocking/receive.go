package blocking

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

const (
	settleLost = lua.SettleLeaseLost
	settleDead = lua.SettleDead
)

// Delivery is an item received with [Queue.Receive]: the value and its
// metadata, leased to the receiver until it calls Ack or Nack or the
// visibility timeout passes.
type Delivery[T any] struct {
	ID         string            // the item's ID (generated, or given with WithID)
	Value      T                 // the decoded value
	Attempt    int               // 1 on first delivery, +1 on each redelivery
	EnqueuedAt time.Time         // when it was first offered (Redis server clock)
	DueAt      time.Time         // when it became due (Redis server clock)
	Headers    map[string]string // the producer's headers; HeaderError holds the last failure
	Priority   int               // 0..MaxPriority (WithPriority)

	q     *Queue[T]
	token string
	// start is when Consume may start handling it (the rate limit's slot);
	// zero: at once.
	start time.Time

	mu sync.Mutex
	// held is how long the lease surely lasts on this machine's clock: the
	// time just before the call that leased or extended it was sent, plus
	// its duration. Redis ends a lease only after its deadline, so a lease
	// found gone before held was settled by an earlier send of the same
	// settlement (go-redis resent it after a lost reply): that is success.
	held  time.Time
	state deliveryState
}

type deliveryState int

const (
	leased   deliveryState = iota
	settling               // an Ack or Nack of it in flight
	settled                // acked, nacked or dead-lettered by this process
	released               // given back by Consume (shutdown)
	lost                   // found gone
)

// Receive waits for the oldest ready item and leases it to the caller for
// the visibility timeout (WithVisibilityTimeout): delivery is at least once.
// Settle it with Ack when done, or Nack to retry later; if neither happens
// in time, the item becomes ready again with Attempt+1. When ctx ends,
// Receive returns ctx.Err() (test with errors.Is), and ErrClosed when the
// queue closes meanwhile; a lease it was being given is handed back.
//
// Waiting costs Redis no writes, and each ready item wakes one waiting
// receiver. An item whose reply is lost with the connection is not lost:
// it is leased (and comes back after the visibility timeout) or stays
// claimed (and comes back after about 30 s).
//
// Bytes that are no envelope are moved to the dead letters and logged; an
// item that cannot be decoded (a value of another type, or an envelope
// version this release does not read) is given back for a retry after the
// default backoff, counted as a failed attempt, with the reason in its
// HeaderError. Receive goes on to the next item.
func (q *Queue[T]) Receive(ctx context.Context) (*Delivery[T], error) {
	ds, err := q.pull(ctx, 1, false)
	if err != nil {
		return nil, err
	}
	return ds[0], nil
}

// pull is Receive and ReceiveBatch (batch): a receive for the caller, and
// the span of the call.
func (q *Queue[T]) pull(ctx context.Context, max int, batch bool) ([]*Delivery[T], error) {
	start := time.Now()
	ds, err := q.receive(ctx, max, DefaultBackoff, store.Limits{})
	if err != nil {
		return nil, err
	}
	if !batch {
		q.core.Tel.Received(ctx, start, ds[0].msg())
		return ds, nil
	}
	msgs := make([]telemetry.Msg, len(ds))
	for i, d := range ds {
		msgs[i] = d.msg()
	}
	q.core.Tel.ReceivedBatch(ctx, start, msgs)
	return ds, nil
}

// msg is what the span of an operation on d needs of it.
func (d *Delivery[T]) msg() telemetry.Msg {
	return telemetry.Msg{ID: d.ID, Attempt: d.Attempt, Due: d.DueAt, Headers: d.Headers}
}

// maxReceive bounds one receive script call (its results are unpacked).
const maxReceive = 256

// receive waits until it can lease at least one item, and leases up to max
// in one script call. backoff sets the retry of items that fail to decode;
// lim holds a Consume's fleet-wide limits: while they allow nothing,
// receive waits (until the next start the rate limit allows, or for a
// lease to end) without polling.
func (q *Queue[T]) receive(ctx context.Context, max int, backoff func(int) time.Duration, lim store.Limits) ([]*Delivery[T], error) {
	if q.parts != nil {
		return q.receiveParts(ctx, max, backoff) // Consume refuses the limits with partitions
	}
	if err := q.core.StartBackground(ctx); err != nil {
		return nil, err
	}
	var claimed []byte
	lease := true // lease what is ready first, then after each claim
	for {
		if claimed == nil {
			// Paused (Pause): wait here, at no cost to Redis, until resumed.
			if err := q.core.AwaitRunning(ctx); err != nil {
				return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
			}
		}
		if lease {
			ds, err := q.lease(ctx, min(max, maxReceive), claimed, backoff, lim)
			var limited *store.Limited
			if errors.As(err, &limited) {
				// The script gave the claimed item back, first in line.
				claimed, lease = nil, true
				if err := q.awaitLimit(ctx, limited); err != nil {
					return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
				}
				continue
			}
			if errors.Is(err, store.ErrPaused) {
				// The script gave the claimed item back, first in line.
				q.core.SawPaused()
				claimed, lease = nil, true
				continue
			}
			if err != nil {
				if claimed != nil {
					// The lease did not happen (a script that fails changes
					// nothing; a call given up on releases what it leased):
					// the claimed item goes back now, not after the
					// reclaimer's hold.
					c := claimed
					q.core.Background(func() { q.unclaimLate(c, nil) })
				}
				return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
			}
			if len(ds) > 0 {
				return ds, nil
			}
		}
		block := q.core.Store.Client().Block(ctx)
		var err error
		claimed, err = queue.Wait(ctx, q.core, func(ctx context.Context) ([]byte, error) {
			return q.core.Store.WaitClaim(ctx, block)
		}, q.unclaimLate)
		if err != nil {
			return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
		}
		// A wait that ended empty found nothing ready: wait again, at no
		// cost to Redis.
		lease = claimed != nil
	}
}

// awaitLimit waits as a limit of receive.lua asks: for the rate limit's
// next start, or (one block at most) for a lease to end.
func (q *Queue[T]) awaitLimit(ctx context.Context, l *store.Limited) error {
	if l.Full {
		block := q.core.Store.Client().Block(ctx)
		_, err := queue.Wait(ctx, q.core, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, q.core.Store.WaitSlot(ctx, block)
		}, nil)
		return err
	}
	t := time.NewTimer(l.Wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-q.core.Closing():
		return ErrClosed
	}
}

// lease runs one receive script call; nil when nothing was ready. Each
// item leased is counted consumed.
func (q *Queue[T]) lease(ctx context.Context, n int, claimed []byte, backoff func(int) time.Duration, lim store.Limits) ([]*Delivery[T], error) {
	vis := q.core.Cfg.Visibility
	prefix := queue.NewToken()
	sent := time.Now()
	res, err := queue.Wait(ctx, q.core, func(ctx context.Context) ([]store.Leased, error) {
		return q.core.Store.Lease(ctx, vis, n, prefix, claimed, lim)
	}, q.releaseLate)
	if err != nil {
		return nil, err
	}
	replied := time.Now()
	ds := make([]*Delivery[T], 0, len(res))
	for _, r := range res {
		if r.Expired {
			q.core.Tel.Expired(ctx, 1)
			q.core.Cfg.Logger.Debug("redelay: item past its TTL moved to the dead letters",
				"queue", q.Name(), "id", string(r.Data))
			continue
		}
		if r.Token == "" {
			q.core.Tel.DeadLettered(ctx, 1)
			q.core.Cfg.Logger.Warn("redelay: bytes that are no envelope moved to the dead letters",
				"queue", q.Name(), "reason", string(r.Data), "dead_letter_list", q.core.Keys.DeadReady)
			continue
		}
		d, err := q.delivery(r.Token, r.Data, sent.Add(vis))
		if err != nil {
			q.failReceived(ctx, d, err, backoff)
			continue
		}
		if r.Start > 0 {
			d.start = replied.Add(r.Start)
		}
		q.core.Tel.Consumed(ctx, d.DueAt)
		ds = append(ds, d)
	}
	return ds, nil
}

// releaseLate gives back leases made after their caller left.
func (q *Queue[T]) releaseLate(res []store.Leased, err error) {
	if err != nil {
		return
	}
	var tokens []string
	for _, r := range res {
		if r.Token != "" {
			tokens = append(tokens, r.Token)
		}
	}
	if len(tokens) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := q.core.Store.Release(ctx, tokens); err != nil {
		q.core.Cfg.Logger.Warn("redelay: could not give back items leased after their caller left; they return after the visibility timeout",
			"queue", q.Name(), "items", len(tokens), "err", err)
	}
}

// delivery decodes a leased envelope. On a decode error it still returns
// the delivery (without its value), to be failed.
func (q *Queue[T]) delivery(token string, raw []byte, held time.Time) (*Delivery[T], error) {
	d := &Delivery[T]{q: q, token: token, held: held}
	e, err := q.core.Decode(raw)
	if err != nil {
		d.ID, _ = envelope.PeekID(raw)
		d.Attempt = envelope.Attempt(raw) + 1
		return d, err
	}
	// A leased envelope counts the deliveries before this one.
	e.Attempt++
	d.ID, d.Attempt, d.EnqueuedAt, d.DueAt, d.Priority = e.ID, e.Attempt, e.EnqueuedAt, e.DueAt, e.Priority()
	d.Headers = maps.Clone(e.Headers)
	if err := queue.Unmarshal(q.core.Cfg.Codec, e.Payload, &d.Value); err != nil {
		return d, queue.DecodeError(q.core.Cfg.Codec, e.ID, err)
	}
	return d, nil
}

// failReceived settles a leased item Go cannot decode as a failed attempt:
// retried after the backoff, with the reason in its headers, and
// dead-lettered after the last attempt. A newer producer's envelope or a
// consumer of the wrong type then does not empty the queue into the dead
// letters; the error is logged.
func (q *Queue[T]) failReceived(ctx context.Context, d *Delivery[T], reason error, backoff func(int) time.Duration) {
	log := q.core.Cfg.Logger.With("queue", q.Name(), "id", d.ID, "attempt", d.Attempt, "reason", reason.Error())
	status, maxAttempts, err := q.settle(context.WithoutCancel(ctx), store.Settle{
		Token: d.token, Reason: reason.Error(), Attempt: d.Attempt, Delay: safeDelay(backoff, d.Attempt),
	})
	switch {
	case err != nil && !errors.Is(err, ErrNotReplicated):
		// The lease stays; it expires and the item comes back.
		log.Error("redelay: could not give back an item that could not be decoded; it returns after the visibility timeout", "err", err)
	case status == settleDead:
		q.core.Tel.DeadLettered(ctx, 1)
		log.Warn("redelay: an item that could not be decoded was dead-lettered after its last attempt", "max_attempts", maxAttempts)
	case status != settleLost:
		q.core.Tel.Nacked(ctx)
		log.Warn("redelay: an item that could not be decoded will be retried (is this consumer older than its producers, or of another type?)")
	}
}

// settle runs settle.lua with the queue's max attempts as the fallback.
func (q *Queue[T]) settle(ctx context.Context, s store.Settle) (status, maxAttempts int64, err error) {
	s.MaxAttempts = q.core.Cfg.MaxAttempts
	type result struct{ status, max int64 }
	r, err := queue.Call(ctx, q.core, func(ctx context.Context) (result, error) {
		st, max, err := q.core.Store.Settle(ctx, s)
		return result{st, max}, err
	}, nil)
	return r.status, r.max, err
}

// begin checks that the delivery is still leased to this process: it
// fails when this process already settled it, is settling it, gave it
// back, or found its lease gone. With settle, it marks the start of a
// settlement (Ack, Nack), so that a second one made meanwhile fails as one
// made after it would; end or abort closes it.
func (d *Delivery[T]) begin(op string, settle bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state != leased {
		return fmt.Errorf("%s %s in %s: %w", op, d.ID, d.q.Name(), ErrLeaseLost)
	}
	if settle {
		d.state = settling
	}
	return nil
}

// abort closes a settlement whose call failed without an outcome: the
// delivery is leased again, and may be settled again.
func (d *Delivery[T]) abort() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == settling {
		d.state = leased
	}
}

// end records a settlement's outcome. found is whether Redis still held
// the lease; when it did not but the lease surely had not expired, an
// earlier send of this settlement did it.
func (d *Delivery[T]) end(op string, found bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if found || time.Now().Before(d.held) {
		d.state = settled
		return nil
	}
	d.state = lost
	return fmt.Errorf("%s %s in %s: %w", op, d.ID, d.q.Name(), ErrLeaseLost)
}

// isSettled reports whether the delivery is no longer leased by us.
func (d *Delivery[T]) isSettled() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state != leased
}

// Ack marks the delivery done: the item is gone for good. It returns an
// error wrapping [ErrLeaseLost] if the lease was lost first (and then the
// item may be delivered again, or already was), or if the delivery was
// already settled, or another Ack or Nack of it is in flight (one of two
// made at once settles it). Ack is idempotent on resend: a reply lost and the
// command sent again does not turn a done ack into ErrLeaseLost. With
// [WithReplicaAck], an error wrapping [ErrNotReplicated] means the ack was
// done on the master but replicas did not confirm it in time: after a
// failover the item may be delivered again.
func (d *Delivery[T]) Ack(ctx context.Context) error {
	ctx, op := d.q.core.Tel.StartSettle(ctx, telemetry.Ack, d.ID, d.Headers)
	err := d.q.ackAll(ctx, []*Delivery[T]{d})[0]
	d.q.core.Tel.Settled(ctx, op, false, err)
	return err
}

// ackAll acks deliveries of q in one round trip, and returns each one's
// result.
func (q *Queue[T]) ackAll(ctx context.Context, ds []*Delivery[T]) []error {
	errs := make([]error, len(ds))
	tokens := make([]string, 0, len(ds))
	live := make([]int, 0, len(ds))
	for i, d := range ds {
		if errs[i] = d.begin("ack", true); errs[i] == nil {
			tokens = append(tokens, d.token)
			live = append(live, i)
		}
	}
	if len(tokens) == 0 {
		return errs
	}
	type result struct {
		held []bool
		errs []error
	}
	r, err := queue.Call(ctx, q.core, func(ctx context.Context) (result, error) {
		held, errs := q.core.Store.Ack(ctx, tokens)
		return result{held, errs}, nil
	}, nil)
	acked := 0
	for j, i := range live {
		d := ds[i]
		switch {
		case err != nil:
			d.abort()
			errs[i] = fmt.Errorf("ack %s in %s: %w", d.ID, q.Name(), err)
		case errors.Is(r.errs[j], ErrNotReplicated):
			// Acked on the master; replicas did not confirm it.
			if errs[i] = d.end("ack", r.held[j]); errs[i] == nil {
				acked++
				errs[i] = fmt.Errorf("ack %s in %s: %w", d.ID, q.Name(), r.errs[j])
			}
		case r.errs[j] != nil:
			d.abort()
			errs[i] = fmt.Errorf("ack %s in %s: %w", d.ID, q.Name(), r.errs[j])
		default:
			if errs[i] = d.end("ack", r.held[j]); errs[i] == nil {
				acked++
			}
		}
	}
	q.core.Tel.Acked(ctx, acked)
	return errs
}

// Nack gives the item back: it becomes ready again after delay, and its
// next delivery has Attempt+1. If this was its last allowed attempt
// (WithMaxAttempts), it goes to the dead letters instead. [WithReason]
// records why. It returns an error wrapping [ErrLeaseLost] if the lease
// was lost first, the delivery was already settled, or another Ack or
// Nack of it is in flight; nothing changes then. A negative delay returns [ErrInvalidArgument]. With
// [WithReplicaAck], an error wrapping [ErrNotReplicated] means the nack
// was done on the master but replicas did not confirm it in time.
func (d *Delivery[T]) Nack(ctx context.Context, delay time.Duration, opts ...NackOption) error {
	var o nackOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := queue.CheckDelay("delay", delay); err != nil {
		return fmt.Errorf("nack %s in %s: %w", d.ID, d.q.Name(), err)
	}
	reason := "nacked"
	if o.reason != nil {
		reason = o.reason.Error()
	}
	return d.nack(ctx, delay, reason, false)
}

// NackOption configures one Nack.
type NackOption func(*nackOptions)

type nackOptions struct {
	reason error
}

// WithReason records why a delivery failed: err's text goes into the item's
// Headers[HeaderError], seen by its next receiver and kept in the dead
// letters if this was its last attempt. Default "nacked".
func WithReason(err error) NackOption {
	return func(o *nackOptions) { o.reason = err }
}

// nack settles a failed delivery: a retry after delay, or the dead letters
// (dead, or the last attempt).
func (d *Delivery[T]) nack(ctx context.Context, delay time.Duration, reason string, dead bool) error {
	how := telemetry.Nack
	if dead {
		how = telemetry.DeadLetter
	}
	ctx, op := d.q.core.Tel.StartSettle(ctx, how, d.ID, d.Headers)
	status, err := d.settleFailed(ctx, delay, reason, dead)
	d.q.core.Tel.Settled(ctx, op, status == settleDead, err)
	return err
}

// settleFailed is nack's work; status is settle.lua's outcome.
func (d *Delivery[T]) settleFailed(ctx context.Context, delay time.Duration, reason string, dead bool) (status int64, err error) {
	if err := d.begin("nack", true); err != nil {
		return 0, err
	}
	status, maxAttempts, err := d.q.settle(ctx, store.Settle{
		Token: d.token, Reason: reason, Dead: dead, Delay: delay, Attempt: d.Attempt,
	})
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		d.abort()
		return 0, fmt.Errorf("nack %s in %s: %w", d.ID, d.q.Name(), err)
	}
	notReplicated := err // nil, or settled on the master without replicas' confirmation
	if err := d.end("nack", status != settleLost); err != nil {
		return status, err
	}
	defer func() {
		if notReplicated != nil {
			err = fmt.Errorf("nack %s in %s: %w", d.ID, d.q.Name(), notReplicated)
		}
	}()
	switch {
	case status == settleDead:
		d.q.core.Tel.DeadLettered(ctx, 1)
		d.q.core.Cfg.Logger.Warn("redelay: item dead-lettered",
			"queue", d.q.Name(), "id", d.ID, "attempt", d.Attempt, "max_attempts", maxAttempts, "error", reason)
	case status != settleLost:
		d.q.core.Tel.Nacked(ctx)
	}
	return status, nil
}

// Extend keeps the item leased for by more from now (not added to the
// current deadline). Consume calls it for you while a handler runs. It
// returns an error wrapping [ErrLeaseLost] if the lease was already lost or
// the delivery settled, and [ErrInvalidArgument] for a non-positive or
// out-of-range duration.
func (d *Delivery[T]) Extend(ctx context.Context, by time.Duration) error {
	if by <= 0 || by > maxVisibility {
		return fmt.Errorf("extend %s in %s: duration %v out of range (0, 1 year]: %w", d.ID, d.q.Name(), by, ErrInvalidArgument)
	}
	if err := d.begin("extend", false); err != nil {
		return err
	}
	held, err := d.q.extend(ctx, by, []*Delivery[T]{d})
	if err != nil {
		return fmt.Errorf("extend %s in %s: %w", d.ID, d.q.Name(), err)
	}
	if !held[0] {
		return fmt.Errorf("extend %s in %s: %w", d.ID, d.q.Name(), ErrLeaseLost)
	}
	return nil
}

// extend extends the leases of ds in one call and returns which were still
// held; those that were not are marked lost.
func (q *Queue[T]) extend(ctx context.Context, by time.Duration, ds []*Delivery[T]) ([]bool, error) {
	tokens := make([]string, len(ds))
	for i, d := range ds {
		tokens[i] = d.token
	}
	sent := time.Now()
	held, err := queue.Call(ctx, q.core, func(ctx context.Context) ([]bool, error) {
		return q.core.Store.Extend(ctx, by, tokens)
	}, nil)
	if err != nil {
		return nil, err
	}
	for i, d := range ds {
		d.mu.Lock()
		switch {
		case held[i]:
			d.held = sent.Add(by)
		case d.state == leased:
			d.state = lost
		}
		d.mu.Unlock()
	}
	return held, nil
}

// safeDelay is backoff(attempt), with a negative or out-of-range result
// taken as 0: a user's backoff function must not break settling.
func safeDelay(backoff func(int) time.Duration, attempt int) time.Duration {
	d := backoff(attempt)
	if queue.CheckDelay("delay", d) != nil {
		return 0
	}
	return d
}
