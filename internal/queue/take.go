package queue

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// MaxBatch bounds one take or receive script call (its results are
// unpacked).
const MaxBatch = 256

// TakeRequest is what a Take, Poll or TakeBatch asks for.
type TakeRequest struct {
	Max      int       // at most this many items (1 for Take and Poll)
	Deadline time.Time // a Poll's: zero waits as long as ctx allows
	Batch    bool      // the span is a batch receive's (TakeBatch)
}

// Take removes up to r.Max ready items of one part, waiting as long as ctx
// allows (until r.Deadline if not zero: then ok is false, with a nil
// error, when nothing came). accept is given each item's ID and payload,
// in order; an error from it (the value cannot be decoded) fails the item
// (see failTaken), and the item is not returned. An item past its deadline
// goes to the dead letters. Take returns once at least one item was
// accepted.
func (q *Queue) Take(ctx context.Context, r TakeRequest, accept func(id string, payload []byte) error) (ok bool, err error) {
	if err := q.Start(ctx); err != nil {
		return false, err
	}
	start := time.Now()
	pop := true // try a non-blocking pop first, and again after each item
	for {
		if err := q.awaitRunning(ctx, r.Deadline); err != nil {
			if errors.Is(err, errPollTimeout) {
				return false, nil
			}
			return false, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		var raws [][]byte
		var from *part
		if pop {
			raws, from, err = q.popEach(ctx, r.Max)
		}
		if err == nil && len(raws) == 0 {
			pop = false
			if !r.Deadline.IsZero() && !time.Now().Before(r.Deadline) {
				return false, nil
			}
			var raw []byte
			var timedOut bool
			raw, from, timedOut, err = q.waitAny(ctx, r.Deadline)
			if timedOut {
				return false, nil
			}
			if err == nil && raw != nil {
				raws = [][]byte{raw}
				if r.Max > 1 {
					if more, perr := from.popN(ctx, r.Max-1); perr == nil {
						raws = append(raws, more...)
					}
				}
			}
		}
		if err != nil {
			return false, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		if len(raws) == 0 {
			continue
		}
		pop = true
		// A single take records its one message; only a batch needs a slice.
		var first telemetry.Msg
		var msgs []telemetry.Msg
		if r.Batch {
			msgs = make([]telemetry.Msg, 0, len(raws))
		}
		n := 0
		for _, raw := range raws {
			if msg, ok := from.taken(ctx, raw, accept); ok {
				if n == 0 {
					first = msg
				}
				if r.Batch {
					msgs = append(msgs, msg)
				}
				n++
			}
		}
		if n == 0 {
			continue
		}
		if r.Batch {
			q.Telemetry().ReceivedBatch(ctx, start, msgs)
		} else {
			q.Telemetry().Received(ctx, start, first)
		}
		return true, nil
	}
}

// popEach pops up to n ready items without blocking from the first part,
// in turn, that has some (none: nil).
func (q *Queue) popEach(ctx context.Context, n int) ([][]byte, *part, error) {
	first := q.firstPart()
	for j := range q.parts {
		p := q.parts[(first+j)%len(q.parts)]
		var raws [][]byte
		var err error
		if n == 1 {
			var raw []byte
			if raw, err = p.pop(ctx); raw != nil {
				raws = [][]byte{raw}
			}
		} else {
			raws, err = p.popN(ctx, n)
		}
		if err != nil || len(raws) > 0 {
			return raws, p, err
		}
	}
	return nil, nil, nil
}

// waitAny waits (one block at most with one part) for an item claimed in
// any part and takes it: nil when the block ended empty or the item went
// back; timedOut when the deadline passed.
func (q *Queue) waitAny(ctx context.Context, deadline time.Time) (raw []byte, from *part, timedOut bool, err error) {
	if len(q.parts) == 1 {
		p := q.parts[0]
		raw, err = p.wait(ctx, deadline)
		if err == nil && raw == nil && !deadline.IsZero() && !time.Now().Before(deadline) {
			return nil, p, true, nil
		}
		return raw, p, false, err
	}
	c, ok, err := q.fan.next(ctx, deadline)
	if err != nil {
		return nil, nil, false, err
	}
	if !ok {
		return nil, nil, true, nil
	}
	p := q.parts[c.part]
	raw, err = p.finishClaim(ctx, c.raw, c.at)
	return raw, p, false, err
}

// errPollTimeout: a Poll's timeout passed while the queue was paused.
var errPollTimeout = errors.New("poll timeout")

// awaitRunning waits while the queue is paused (Pause pauses every part),
// until deadline (not zero: errPollTimeout).
func (q *Queue) awaitRunning(ctx context.Context, deadline time.Time) error {
	c := q.parts[0]
	// The first read of the flag is not bound by a Poll's timeout (a
	// zero timeout would never see it).
	if paused, err := c.Paused(ctx); err != nil || !paused {
		return err
	}
	if deadline.IsZero() {
		return c.AwaitRunning(ctx)
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	err := c.AwaitRunning(wctx)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		return errPollTimeout
	}
	return err
}

// taken checks an item a Take popped: false, when it cannot be returned,
// after dealing with it (an item past its TTL goes to the dead letters,
// one that cannot be decoded is failed: see failTaken). It counts the item
// consumed, and returns what the span of the Take needs of it.
func (c *part) taken(ctx context.Context, raw []byte, accept func(id string, payload []byte) error) (telemetry.Msg, bool) {
	e, err := c.Decode(raw)
	if err == nil && c.Deadlines() && Expired(e, c.now()) {
		c.expireTaken(ctx, raw, e.ID)
		return telemetry.Msg{}, false
	}
	if err == nil {
		if aerr := accept(e.ID, e.Payload); aerr != nil {
			err = DecodeError(c.Cfg.Codec, e.ID, aerr)
		}
	}
	if err != nil {
		c.failTaken(ctx, raw, err)
		return telemetry.Msg{}, false
	}
	c.Tel.Consumed(ctx, e.DueAt)
	return telemetry.Msg{ID: e.ID, Attempt: e.Attempt + 1, Due: e.DueAt, Headers: e.Headers}, true
}

// pop takes a ready item without blocking (nil when none).
func (c *part) pop(ctx context.Context) ([]byte, error) {
	raws, err := c.popN(ctx, 1)
	if len(raws) == 0 {
		return nil, err
	}
	return raws[0], err
}

// popN takes up to n ready items without blocking. The takes of one part's
// concurrent callers share one pop script call (c.pops), each given its
// share of the items in the order the script took them.
func (c *part) popN(ctx context.Context, n int) ([][]byte, error) {
	if err := c.layout.check(ctx, &c.bg); err != nil {
		return nil, err
	}
	raws, _, err := c.pops.do(ctx, n)
	return raws, err
}

// popCalls takes ready items for several callers (up to ns[i] each) in one
// pop script call.
func (c *part) popCalls(ctx context.Context, ns []int) ([][][]byte, error) {
	raws, err := c.Store.PopN(ctx, sum(ns))
	if err != nil {
		return nil, err
	}
	return share(raws, ns), nil
}

// leftPops puts back, in their order at the head of the ready list, the
// items taken for callers that stopped waiting while their take was on
// its way.
func (c *part) leftPops(outs [][][]byte) {
	var raws [][]byte
	for _, o := range outs {
		raws = append(raws, o...)
	}
	for i := len(raws) - 1; i >= 0; i-- {
		c.giveBack(raws[i], nil)
	}
}

// waitClaim blocks (one block at most) until an item is ready and claims
// it (nil when the block ended empty); an item claimed after the caller
// left goes back.
func (c *part) waitClaim(ctx context.Context) ([]byte, error) {
	block := c.Store.Client().Block(ctx)
	return Wait(ctx, c, func(ctx context.Context) ([]byte, error) {
		return c.Store.WaitClaim(ctx, block)
	}, c.unclaimLate)
}

// wait blocks (one block at most) until an item is ready, claims it and
// takes it: nil when the block or the deadline passed first.
func (c *part) wait(ctx context.Context, deadline time.Time) ([]byte, error) {
	wctx := ctx
	if !deadline.IsZero() {
		if time.Until(deadline) <= 0 {
			return nil, nil
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	claimed := time.Now()
	raw, err := c.waitClaim(wctx)
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil { // the Poll deadline
			return nil, nil
		}
		return nil, err
	}
	if raw == nil {
		return nil, nil
	}
	return c.finishClaim(ctx, raw, claimed)
}

// finishClaim takes an item a wait claimed at claimed (nil when it went
// back: the queue was paused meanwhile, or the reclaimer gave it back).
func (c *part) finishClaim(ctx context.Context, raw []byte, claimed time.Time) ([]byte, error) {
	if paused, _ := c.Paused(ctx); paused {
		// Paused while this wait was blocked: the item goes back first in
		// line, and take waits for Resume.
		c.unclaimLate(raw, nil)
		return nil, nil
	}
	if store.IsMarker(raw) {
		// Woken for an item of the priority set, or a group's turn: take
		// the next item, as a non-blocking pop does (the marker or turn
		// leaves the claimed list).
		return Wait(ctx, c, func(ctx context.Context) ([]byte, error) {
			return c.Store.TakeMarked(ctx, raw)
		}, c.giveBack)
	}
	taken, err := Call(context.WithoutCancel(ctx), c, func(ctx context.Context) (bool, error) {
		return c.Store.Confirm(ctx, raw)
	}, nil)
	if err != nil {
		// Did the LREM run? Giving the item back tells: if it is still
		// claimed, it goes back to the queue; if not, this Take took it.
		back, uerr := Call(context.WithoutCancel(ctx), c, func(ctx context.Context) (bool, error) {
			return c.Store.Unclaim(ctx, raw)
		}, nil)
		if uerr != nil || back {
			return nil, err // given back, or still claimed: the reclaimer gives it back
		}
		taken = false
	}
	if !taken {
		// Not in the claimed list: either an earlier send of this very
		// Confirm took it (go-redis resent it after a lost reply), or the
		// reclaimer gave it back, which it does only after the item sat
		// there for store.ClaimedHold.
		if time.Since(claimed) < store.ClaimedHold/2 {
			return raw, nil
		}
		c.Cfg.Logger.Warn("redelay: a claimed item was given back before Take could take it; it stays in the queue",
			"queue", c.Name(), "waited", time.Since(claimed))
		return nil, nil
	}
	return raw, nil
}

// unclaimLate gives back an item a wait claimed after its caller left.
func (c *part) unclaimLate(raw []byte, err error) {
	if err != nil || raw == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Store.Unclaim(ctx, raw); err != nil {
		c.Cfg.Logger.Warn("redelay: could not give back an item claimed after its caller left; the reclaimer will",
			"queue", c.Name(), "err", err)
	}
}

// giveBack puts an item popped after its caller left back at the head
// (nothing when the pop failed or found none).
func (c *part) giveBack(raw []byte, err error) {
	if err != nil || raw == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Store.PushBack(ctx, raw); err != nil {
		id, _ := envelope.PeekID(raw)
		c.Cfg.Logger.Error("redelay: an item popped after its caller left could not be put back and is lost",
			"queue", c.Name(), "id", id, "err", err)
	}
}

// expireTaken moves an item Take popped past its deadline (WithTTL) to the
// dead letters, with the error "expired" and without its deadline.
func (c *part) expireTaken(ctx context.Context, raw []byte, id string) {
	ctx = context.WithoutCancel(ctx)
	dead := envelope.DeadLetter(raw, "expired", envelope.Attempt(raw), c.now())
	if _, err := Call(ctx, c, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.Store.DeadLetter(ctx, dead)
	}, nil); err != nil {
		c.Cfg.Logger.Error("redelay: an item past its TTL could not be dead-lettered and is dropped",
			"queue", c.Name(), "id", id, "err", err)
		return
	}
	c.Tel.Expired(ctx, 1)
	c.Cfg.Logger.Debug("redelay: item past its TTL moved to the dead letters", "queue", c.Name(), "id", id)
}

// failTaken deals with an item Take popped but cannot return: bytes that
// are no envelope go to the dead letters as they are; an envelope that
// cannot be decoded is scheduled again, its failure counted, with the
// reason in its headers (dead-lettered past the max attempts).
func (c *part) failTaken(ctx context.Context, raw []byte, reason error) {
	ctx = context.WithoutCancel(ctx)
	log := c.Cfg.Logger.With("queue", c.Name(), "reason", reason.Error(), "bytes", len(raw))
	if !envelope.IsEnvelope(raw) {
		if _, err := Call(ctx, c, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, c.Store.DeadLetter(ctx, raw)
		}, nil); err != nil {
			log.Error("redelay: bytes that are no envelope could not be dead-lettered and are dropped", "err", err)
			return
		}
		c.Tel.DeadLettered(ctx, 1)
		log.Warn("redelay: bytes that are no envelope moved to the dead letters")
		return
	}
	attempt := envelope.Attempt(raw) + 1
	id, _ := envelope.PeekID(raw)
	outcome, maxAttempts, err := c.settle(ctx, store.Settle{
		Env: raw, Reason: reason.Error(), Attempt: attempt, Delay: DefaultBackoff(attempt), Nonce: NewToken(),
	})
	log = log.With("id", id, "attempt", attempt)
	switch {
	case err != nil && !errors.Is(err, ErrNotReplicated):
		log.Error("redelay: an item that could not be decoded could not be put back and is lost", "err", err)
	case outcome == store.SettleDead:
		c.Tel.DeadLettered(ctx, 1)
		log.Warn("redelay: an item that could not be decoded was dead-lettered after its last attempt", "max_attempts", maxAttempts)
	default:
		log.Warn("redelay: an item that could not be decoded will be retried (is this consumer older than its producers, or of another type?)")
	}
}
