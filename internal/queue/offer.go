package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/store"
)

// Duplicate modes of an offer with an ID of the caller's.
const (
	DupReplace  = store.DupReplace
	DupDebounce = store.DupDebounce
	DupUnique   = store.DupUnique
)

// When is when an offered item falls due: Now, After a delay, or At a
// time.
type When struct {
	mode  byte  // 'r' ready now, 'd' after us µs, 'a' at us (Unix µs)
	us    int64 // the delay or due time
	delay time.Duration
	err   error
}

// Now: ready at once.
func Now() When { return When{mode: 'r'} }

// After: due after d (checked: not negative, not past MaxDue).
func After(d time.Duration) When {
	return When{mode: 'd', us: d.Microseconds(), delay: d, err: CheckDelay("delay", d)}
}

// At: due at t (checked: within 1970 to MaxDue).
func At(t time.Time) When {
	return When{mode: 'a', us: t.UnixMicro(), delay: time.Until(t), err: CheckDue(t)}
}

// Err is why the due time cannot be used, nil if it can.
func (w When) Err() error { return w.err }

// OfferRequest is what one offer asks for besides its value and due time.
type OfferRequest struct {
	ID       string // the caller's ID, when HasID
	HasID    bool
	Headers  map[string]string
	Priority int
	TTL      time.Duration
	// Group is the item's group key (blocking.WithGroup), with HasGroup.
	Group    string
	HasGroup bool
	// Dup is a duplicate mode (DupReplace...), 0 for none; DupName the
	// option that set it (for errors), DupArg its duration.
	Dup     byte
	DupName string
	DupArg  time.Duration
	// Err is an option that cannot be used.
	Err error
}

// SetDup records a duplicate mode; a second one is an error.
func (r *OfferRequest) SetDup(mode byte, name string, arg time.Duration) {
	if r.Dup != 0 && r.Err == nil {
		r.Err = fmt.Errorf("%s and %s cannot be combined (see WithReplace): %w", r.DupName, name, ErrInvalidArgument)
	}
	r.Dup, r.DupName, r.DupArg = mode, name, arg
}

// check validates the request's options, except the ID and headers.
func (r *OfferRequest) check() error {
	if r.Err != nil {
		return r.Err
	}
	if err := CheckPriority(r.Priority); err != nil {
		return err
	}
	if err := CheckTTL(r.TTL); err != nil {
		return err
	}
	if r.HasGroup {
		if err := CheckGroup(r.Group); err != nil {
			return err
		}
	}
	if r.Dup == 0 {
		return nil
	}
	if !r.HasID {
		return fmt.Errorf("%s needs WithID: %w", r.DupName, ErrInvalidArgument)
	}
	if r.Dup != DupReplace {
		if r.DupArg <= 0 {
			return fmt.Errorf("%s(%v): not positive: %w", r.DupName, r.DupArg, ErrInvalidArgument)
		}
		if err := CheckDelay(r.DupName, r.DupArg); err != nil {
			return err
		}
	}
	return nil
}

// Offer stores v, due at w, and returns its ID: with a nil error, stored;
// with the ID and an error, sent but its outcome unknown, or stored on
// the master without the replicas' confirmation (ErrNotReplicated);
// without the ID, not stored.
func (q *Queue) Offer(ctx context.Context, v any, w When, r OfferRequest) (string, error) {
	if err := w.err; err != nil {
		return "", fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	if err := q.Err(); err != nil {
		return "", err
	}
	if err := r.check(); err != nil {
		return "", fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	id, err := OfferID(r.ID, r.HasID, r.Headers)
	if err != nil {
		return "", fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	if !r.HasID && r.HasGroup && len(q.parts) > 1 {
		id = idIn(keys.PartitionOf(r.Group, len(q.parts)), len(q.parts))
	}
	tel := q.Telemetry()
	ctx, op, trace := tel.StartSend(ctx, id, max(w.delay, 0))
	err = q.routeOffer(id, &r).offerOne(ctx, id, v, w, &r, trace)
	tel.Sent(ctx, op, 1, err)
	q.announceOffered(ctx, err)
	return OfferResult(id, err)
}

// announceOffered records the queue in the registry of queues after this
// process's first offer that stored something (or Schedule), and again
// after the first one an hour later (mover.AnnounceEvery), so that a
// queue only producers use is listed (inspect.Queues, the dashboard, the
// CLI) and not forgotten by the retention sweep: one more round trip for
// those offers, none for the others. A failure is tried again by the next
// offer; it does not fail the offer.
func (q *Queue) announceOffered(ctx context.Context, err error) {
	if last := q.announced.Load(); last != 0 && time.Now().UnixNano()-last < int64(mover.AnnounceEvery) {
		return
	}
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return
	}
	c := q.parts[0]
	_, aerr := Call(ctx, c, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.Store.Announce(ctx, c.Cfg.Codec.Name(), false)
	}, nil)
	if aerr == nil {
		q.announced.Store(time.Now().UnixNano())
	}
}

// offerOne encodes and stores one item in c.
func (c *part) offerOne(ctx context.Context, id string, v any, w When, r *OfferRequest, trace map[string]string) error {
	env, err := c.Encode(id, v, r.Headers, trace, r.Priority, r.TTL, r.Group)
	if err != nil {
		return fmt.Errorf("offer %s: %w", c.Name(), err)
	}
	item := store.OfferItem{ID: id, Env: env, Mode: w.mode, US: w.us}
	if !r.HasID {
		item.Mode = store.Generated(w.mode)
	}
	var status store.OfferStatus
	if r.Dup != 0 {
		status, err = c.Upsert(ctx, item, r.Dup, r.DupArg.Microseconds())
	} else {
		status, err = c.Offer(ctx, item)
	}
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		return fmt.Errorf("offer %s: %w", c.Name(), err)
	}
	if status == store.OfferDuplicate && w.mode != 'r' {
		if r.Dup == DupUnique {
			return fmt.Errorf("offer %s: id %q is pending or was offered within the last %v: %w", c.Name(), id, r.DupArg, ErrDuplicate)
		}
		return fmt.Errorf("offer %s: id %q is pending: %w", c.Name(), id, ErrDuplicate)
	}
	if err != nil {
		return fmt.Errorf("offer %s: %w", c.Name(), err)
	}
	return nil
}

// batchChunk bounds one offer script call of a batch; batchPipeline is
// how many calls go in one round trip.
const (
	batchChunk    = 500
	batchPipeline = 8
)

// OfferBatch stores n values (value(i) is the i-th), all due after delay,
// with generated IDs, and returns the IDs of those stored, in order (see
// delayed.Queue.OfferBatch for what a partial result means).
func (q *Queue) OfferBatch(ctx context.Context, n int, value func(i int) any, delay time.Duration, r OfferRequest) ([]string, error) {
	if err := q.Err(); err != nil {
		return nil, err
	}
	if err := CheckDelay("delay", delay); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", q.Name(), err)
	}
	if r.HasID || r.Dup != 0 {
		return nil, fmt.Errorf("offer batch %s: WithID and the duplicate modes need an ID of the caller's: OfferBatch generates the IDs: %w", q.Name(), ErrInvalidArgument)
	}
	if err := CheckHeaders(r.Headers); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", q.Name(), err)
	}
	if err := r.check(); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", q.Name(), err)
	}
	tel := q.Telemetry()
	ctx, op, trace := tel.StartSendBatch(ctx, n, delay)
	ids, err := q.offerBatch(ctx, n, value, delay, &r, trace)
	tel.Sent(ctx, op, n, err)
	if len(ids) > 0 {
		q.announceOffered(ctx, nil)
	}
	return ids, err
}

// offerBatch splits the batch by part (all at once) and returns the IDs
// stored, in the batch's order.
func (q *Queue) offerBatch(ctx context.Context, n int, value func(i int) any, delay time.Duration, r *OfferRequest, trace map[string]string) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = NewID()
		if r.HasGroup && len(q.parts) > 1 {
			ids[i] = idIn(keys.PartitionOf(r.Group, len(q.parts)), len(q.parts))
		}
	}
	if len(q.parts) == 1 {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		return q.parts[0].offerBatch(ctx, ids, idx, value, delay, r, trace)
	}
	if err := q.checkLayout(ctx); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", q.Name(), NotStored(err))
	}
	idx := make([][]int, len(q.parts))
	for i, id := range ids {
		p := keys.PartitionOf(id, len(q.parts))
		if r.HasGroup {
			p = keys.PartitionOf(r.Group, len(q.parts)) // a group lives in one part
		}
		idx[p] = append(idx[p], i)
	}
	stored := make([]bool, n)
	err := q.each(func(p int, c *part) error {
		if len(idx[p]) == 0 {
			return nil
		}
		done, err := c.offerBatch(ctx, ids, idx[p], value, delay, r, trace)
		for j := range done {
			stored[idx[p][j]] = true
		}
		return err
	})
	out := make([]string, 0, n)
	for i, ok := range stored {
		if ok {
			out = append(out, ids[i])
		}
	}
	return out, err
}

// offerBatch stores the items idx of a batch (ids[i], value(i)) in c, in
// pipelined chunks; with a bound, all of them or none. It returns the IDs
// stored, in order.
func (c *part) offerBatch(ctx context.Context, ids []string, idx []int, value func(i int) any, delay time.Duration, r *OfferRequest, trace map[string]string) ([]string, error) {
	name := c.Name()
	out := make([]string, 0, len(idx))
	group := batchChunk * batchPipeline
	bound := c.Cfg.MaxSize
	pass := ""
	if bound > 0 {
		group = max(len(idx), 1)
		pass = NewToken()
	}
	for gStart := 0; gStart < len(idx); gStart += group {
		gIdx := idx[gStart:min(gStart+group, len(idx))]
		calls := make([]*store.OfferCall, 0, (len(gIdx)+batchChunk-1)/batchChunk)
		var lanes []*OfferLane
		release := func() {
			for _, l := range lanes {
				l.Release()
			}
		}
		for cStart := 0; cStart < len(gIdx); cStart += batchChunk {
			chunk := gIdx[cStart:min(cStart+batchChunk, len(gIdx))]
			lane := c.Lane()
			lanes = append(lanes, lane)
			call := &store.OfferCall{Lane: lane.Name, Nonce: lane.Nonce(), Items: make([]store.OfferItem, len(chunk)), Bound: bound}
			if bound > 0 {
				call.Batch, call.Offset, call.Pass = len(idx), cStart, pass
			}
			for j, i := range chunk {
				env, err := c.Encode(ids[i], value(i), r.Headers, trace, r.Priority, r.TTL, r.Group)
				if err != nil {
					release()
					return out, fmt.Errorf("offer batch %s: item %d: %w", name, i, err)
				}
				call.Items[j] = store.OfferItem{ID: ids[i], Env: env, Mode: store.Generated('d'), US: delay.Microseconds()}
			}
			calls = append(calls, call)
		}
		_, err := Call(ctx, c, func(ctx context.Context) (struct{}, error) {
			defer release()
			c.Store.OfferPipelined(ctx, calls, bound > 0)
			return struct{}{}, nil
		}, nil)
		if err != nil {
			return out, fmt.Errorf("offer batch %s: %w", name, OfferError(err))
		}
		var notReplicated error
		for k, call := range calls {
			first := gIdx[k*batchChunk]
			if call.Err != nil && !errors.Is(call.Err, ErrNotReplicated) {
				return out, fmt.Errorf("offer batch %s: items %d to %d: %w", name, first, first+len(call.Items)-1, OfferError(call.Err))
			}
			if call.Err != nil && notReplicated == nil {
				notReplicated = fmt.Errorf("offer batch %s: items %d to %d: %w", name, gIdx[0], gIdx[len(gIdx)-1], call.Err)
			}
			if slices.Contains(call.Statuses, store.OfferFull) {
				return out, fmt.Errorf("offer batch %s of %d items: %w", name, len(ids), c.ErrFull())
			}
			for _, it := range call.Items {
				out = append(out, it.ID)
			}
		}
		if notReplicated != nil {
			return out, notReplicated
		}
	}
	return out, nil
}

// CheckID validates an item's ID given to a call that looks it up.
func CheckID(id string) error {
	_, err := OfferID(id, true, nil)
	return err
}
