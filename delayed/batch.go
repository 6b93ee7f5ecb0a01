package delayed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
)

// batchChunk is how many items one offer.lua call adds: enough to
// make the per-call costs vanish, few enough that one call stays short (a
// chunk of 500 small items runs in about a millisecond on the server).
const batchChunk = 500

// batchPipeline is how many chunks go in one pipelined round trip.
const batchPipeline = 8

// OfferBatch offers every value with the same delay and returns their
// generated IDs in order. Items go in chunks of 500, each added by one
// atomic script call, eight chunks per round trip: the cost per item is a
// fraction of a single Offer's. The batch as a whole is not atomic:
// with an error come the IDs of the chunks offered before the first failed
// one (the failed chunk, and later chunks of the same round trip, may have
// been offered too). With blocking.WithReplicaAck, an error wrapping
// [ErrNotReplicated] comes with the IDs of every item stored so far: the
// last round trip's were stored on the master, and replicas did not
// confirm them in time; the batch stops there. On a queue with a bound
// (blocking.WithMaxSize) the batch fits as a whole or is refused as a
// whole with [ErrQueueFull]: its chunks then go in one MULTI/EXEC
// transaction, so keep such batches to thousands of items, not millions.
// On a queue opened with blocking.WithPartitions, the values are split by
// the partition of their generated IDs and each partition's share goes as
// above, the partitions at once: with an error come the IDs (in slice
// order) of the chunks known offered, in every partition, and no promise
// is made about the others. Values due at the same time become ready in
// slice order (within a partition, when partitioned). Each chunk is
// idempotent on resend, like Offer. WithHeaders and WithPriority apply to
// every item, and so do WithTTL;
// WithID, WithReplace, WithDebounce and WithUniqueFor are refused
// ([ErrInvalidArgument]).
func (d *Queue[T]) OfferBatch(ctx context.Context, values []T, delay time.Duration, opts ...OfferOption) ([]string, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	if err := queue.CheckDelay("delay", delay); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", d.core.Name(), err)
	}
	var o offerOptions
	o.apply(opts)
	if o.hasID || o.dup != 0 {
		return nil, fmt.Errorf("offer batch %s: WithID and the duplicate modes need an ID of the caller's: OfferBatch generates the IDs: %w", d.core.Name(), ErrInvalidArgument)
	}
	if err := queue.CheckHeaders(o.headers); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", d.core.Name(), err)
	}
	if err := o.check(); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", d.core.Name(), err)
	}
	ctx, op, trace := d.core.Tel.StartSendBatch(ctx, len(values), delay)
	var ids []string
	var err error
	if d.parts != nil {
		ids, err = d.offerBatchParts(ctx, values, delay, &o, trace)
	} else {
		ids, err = d.offerBatch(ctx, values, nil, delay, &o, trace)
	}
	d.core.Tel.Sent(ctx, op, len(values), err)
	return ids, err
}

// offerBatch offers values under the IDs given (generated when nil).
func (d *Queue[T]) offerBatch(ctx context.Context, values []T, given []string, delay time.Duration, o *offerOptions, trace map[string]string) ([]string, error) {
	name := d.core.Name()
	ids := make([]string, 0, len(values))
	group := batchChunk * batchPipeline
	bound := d.core.Cfg.MaxSize
	pass := ""
	if bound > 0 {
		// All or nothing against the bound: every chunk in one transaction.
		group = max(len(values), 1)
		pass = queue.NewToken()
	}
	for gStart := 0; gStart < len(values); gStart += group {
		gValues := values[gStart:min(gStart+group, len(values))]
		calls := make([]*store.OfferCall, 0, (len(gValues)+batchChunk-1)/batchChunk)
		var lanes []*queue.OfferLane
		release := func() {
			for _, l := range lanes {
				l.Release()
			}
		}
		for cStart := 0; cStart < len(gValues); cStart += batchChunk {
			chunk := gValues[cStart:min(cStart+batchChunk, len(gValues))]
			lane := d.core.Lane()
			lanes = append(lanes, lane)
			c := &store.OfferCall{Lane: lane.Name, Nonce: lane.Nonce(), Items: make([]store.OfferItem, len(chunk)), Bound: bound}
			if bound > 0 {
				c.Batch, c.Offset, c.Pass = len(values), cStart, pass
			}
			for i, v := range chunk {
				var id string
				if given != nil {
					id = given[gStart+cStart+i]
				} else {
					id = queue.NewID()
				}
				env, err := d.core.Encode(id, v, o.headers, trace, o.prio, o.ttl)
				if err != nil {
					release()
					return ids, fmt.Errorf("offer batch %s: item %d: %w", name, gStart+cStart+i, err)
				}
				c.Items[i] = store.OfferItem{ID: id, Env: env, Mode: 'd', US: delay.Microseconds()}
			}
			calls = append(calls, c)
		}
		// The lanes are returned when the call ends, even one this caller
		// stopped waiting for: a lane serves one call at a time.
		_, err := queue.Call(ctx, d.core, func(ctx context.Context) (struct{}, error) {
			defer release()
			d.core.Store.OfferPipelined(ctx, calls, bound > 0)
			return struct{}{}, nil
		}, nil)
		if err != nil {
			return ids, fmt.Errorf("offer batch %s: %w", name, queue.OfferError(err))
		}
		var notReplicated error
		for i, c := range calls {
			first := gStart + i*batchChunk
			if c.Err != nil && !errors.Is(c.Err, ErrNotReplicated) {
				return ids, fmt.Errorf("offer batch %s: items %d to %d: %w", name, first, first+len(c.Items)-1, queue.OfferError(c.Err))
			}
			if c.Err != nil && notReplicated == nil {
				// One WAIT covers the round trip's calls.
				notReplicated = fmt.Errorf("offer batch %s: items %d to %d: %w", name, gStart, gStart+len(gValues)-1, c.Err)
			}
			if slices.Contains(c.Statuses, lua.OfferFull) {
				return ids, fmt.Errorf("offer batch %s of %d items: %w", name, len(values), d.core.ErrFull())
			}
			for _, it := range c.Items {
				ids = append(ids, it.ID)
			}
		}
		if notReplicated != nil {
			// Stored on the master; the next round trips would wait for
			// the same replicas.
			return ids, notReplicated
		}
	}
	return ids, nil
}
