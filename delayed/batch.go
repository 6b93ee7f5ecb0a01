package delayed

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/queue"
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
// one (later chunks of the same round trip may have been offered too).
// Values due at the same time become ready in slice order.
func (d *Queue[T]) OfferBatch(ctx context.Context, values []T, delay time.Duration) ([]string, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	if delay < 0 {
		return nil, fmt.Errorf("offer batch: negative delay %v: %w", delay, ErrInvalidArgument)
	}
	ctx, span, headers := d.core.Tel.StartSendBatch(ctx, len(values), delay)
	ids, err := d.offerBatch(ctx, values, delay, headers)
	d.core.Tel.Sent(ctx, span, len(ids), err)
	return ids, err
}

// batchCall is one offer.lua call: the IDs and its ARGV.
type batchCall struct {
	ids  []string
	argv []any
	cmd  *redis.Cmd
}

func (d *Queue[T]) offerBatch(ctx context.Context, values []T, delay time.Duration, headers map[string]string) ([]string, error) {
	k := d.core.Keys
	ids := make([]string, 0, len(values))
	group := batchChunk * batchPipeline
	for gStart := 0; gStart < len(values); gStart += group {
		gValues := values[gStart:min(gStart+group, len(values))]
		calls := make([]*batchCall, 0, (len(gValues)+batchChunk-1)/batchChunk)
		for cStart := 0; cStart < len(gValues); cStart += batchChunk {
			chunk := gValues[cStart:min(cStart+batchChunk, len(gValues))]
			c := &batchCall{ids: make([]string, len(chunk)), argv: make([]any, 1, 1+4*len(chunk))}
			c.argv[0] = k.Wake
			for i, v := range chunk {
				c.ids[i] = queue.NewID()
				env, err := d.core.Encode(c.ids[i], v, headers)
				if err != nil {
					return ids, fmt.Errorf("offer batch %s: item %d: %w", k.Name, gStart+cStart+i, err)
				}
				c.argv = append(c.argv, c.ids[i], env, "d", delay.Microseconds())
			}
			calls = append(calls, c)
		}
		send := func(calls []*batchCall) {
			pipe := d.core.RDB.Pipeline()
			for _, c := range calls {
				c.cmd = d.evalOffers(ctx, pipe, c.argv)
			}
			_, _ = pipe.Exec(ctx) // errors are read per command below
		}
		send(calls)
		// A pipeline sends only EVALSHA. A server that does not know the
		// script yet (first use, restart, failover) answers NOSCRIPT and did
		// nothing: load it once and send those calls again.
		var missing []*batchCall
		for _, c := range calls {
			if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			if err := lua.Offer.Load(ctx, d.core.RDB).Err(); err != nil {
				return ids, fmt.Errorf("offer batch %s: load script: %w", k.Name, err)
			}
			send(missing)
		}
		for i, c := range calls {
			first := gStart + i*batchChunk
			statuses, err := c.cmd.Int64Slice()
			if err == nil && len(statuses) != len(c.ids) {
				err = fmt.Errorf("%d statuses for %d offers", len(statuses), len(c.ids))
			}
			if err != nil {
				return ids, fmt.Errorf("offer batch %s: items %d to %d: %w", k.Name, first, first+len(c.ids)-1, err)
			}
			// Every status counts as offered: a generated ID found pending
			// is this batch's own item, stored by an earlier send of the
			// same call whose reply was lost (see Queue.send).
			ids = append(ids, c.ids...)
		}
	}
	return ids, nil
}
