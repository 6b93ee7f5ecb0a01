package delayed

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/queue"
)

// batchChunk is how many offers go in one pipeline round trip.
const batchChunk = 500

// OfferBatch offers every value with the same delay, in pipelined round
// trips of a few hundred, and returns their generated IDs in order. Each
// item is offered atomically by itself; the batch as a whole is not atomic:
// with an error come the IDs of the items offered before the first failure
// (items after it in the same round trip may have been offered too).
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

func (d *Queue[T]) offerBatch(ctx context.Context, values []T, delay time.Duration, headers map[string]string) ([]string, error) {
	k := d.core.Keys
	keys := []string{k.Delayed, k.Items, k.Seq, k.Ready}
	ids := make([]string, 0, len(values))
	for start := 0; start < len(values); start += batchChunk {
		chunk := values[start:min(start+batchChunk, len(values))]
		chunkIDs := make([]string, len(chunk))
		envs := make([][]byte, len(chunk))
		for i, v := range chunk {
			chunkIDs[i] = queue.NewID()
			env, err := d.core.Encode(chunkIDs[i], v, headers)
			if err != nil {
				return ids, fmt.Errorf("offer batch %s: item %d: %w", k.Name, start+i, err)
			}
			envs[i] = env
		}
		offer := func(pipe redis.Pipeliner, i int) *redis.Cmd {
			return lua.Offer.EvalSha(ctx, pipe, keys, chunkIDs[i], envs[i], "delay", delay.Milliseconds(), k.Wake)
		}
		cmds := make([]*redis.Cmd, len(chunk))
		pipe := d.core.RDB.Pipeline()
		for i := range chunk {
			cmds[i] = offer(pipe, i)
		}
		_, _ = pipe.Exec(ctx) // errors are read per command below
		// A pipeline sends only EVALSHA. A server that does not know the
		// script yet (first use, restart, failover) answers NOSCRIPT and did
		// nothing: load it once and send those offers again.
		var missing []int
		for i, cmd := range cmds {
			if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
				missing = append(missing, i)
			}
		}
		if len(missing) > 0 {
			if err := lua.Offer.Load(ctx, d.core.RDB).Err(); err != nil {
				return ids, fmt.Errorf("offer batch %s: load script: %w", k.Name, err)
			}
			pipe := d.core.RDB.Pipeline()
			for _, i := range missing {
				cmds[i] = offer(pipe, i)
			}
			_, _ = pipe.Exec(ctx)
		}
		for i, cmd := range cmds {
			if err := cmd.Err(); err != nil {
				return ids, fmt.Errorf("offer batch %s: item %d: %w", k.Name, start+i, err)
			}
			ids = append(ids, chunkIDs[i])
		}
	}
	return ids, nil
}
