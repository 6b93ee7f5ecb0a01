package transfer

import (
	"context"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/lua"
)

// exhaustedHold is how long the reclaim script sets aside an item that used
// up its attempts while this worker dead-letters it.
const exhaustedHold = 10 * time.Second

// reclaim makes items with expired leases ready again, in batches, and
// dead-letters those out of attempts. It returns when the next lease
// expires, relative to now (negative: none held).
func (w *worker) reclaim(ctx context.Context) (time.Duration, error) {
	k := w.t.Keys
	for {
		res, err := lua.Reclaim.Run(ctx, w.rdb, []string{k.Leases, k.Inflight, k.Ready},
			w.t.BatchSize, w.t.MaxAttempts, exhaustedHold.Milliseconds()).Slice()
		if err != nil {
			return 0, fmt.Errorf("reclaim %s: %w", k.Name, err)
		}
		if len(res) < 3 || len(res)%2 != 1 {
			return 0, fmt.Errorf("reclaim %s: unexpected reply %v", k.Name, res)
		}
		moved, _ := res[0].(int64)
		next, _ := res[1].(int64)
		now, _ := res[2].(int64)
		exhausted := (len(res) - 3) / 2
		for i := 3; i < len(res); i += 2 {
			token, _ := res[i].(string)
			env, _ := res[i+1].(string)
			if err := w.bury(ctx, token, env); err != nil {
				return 0, err
			}
		}
		if moved > 0 {
			w.t.Logger.Info("redelay: reclaimed expired leases", "queue", k.Name, "items", moved)
		}
		if int(moved)+exhausted >= w.t.BatchSize {
			continue
		}
		if next < 0 {
			return -1, nil
		}
		return time.Duration(next-now) * time.Millisecond, nil
	}
}

// bury dead-letters an item whose lease expired on its last attempt. A
// leased envelope's attempt counter holds the deliveries before this one.
func (w *worker) bury(ctx context.Context, token, raw string) error {
	k := w.t.Keys
	out, id := envelope.WithError([]byte(raw), fmt.Sprintf("lease expired on attempt %d of %d", envelope.Attempt([]byte(raw))+1, w.t.MaxAttempts))
	n, err := lua.Nack.Run(ctx, w.rdb,
		[]string{k.Leases, k.Inflight, k.Delayed, k.Items, k.Seq, k.Ready, k.DeadReady},
		token, out, "dead", 0, id, k.Wake).Int64()
	if err != nil {
		return fmt.Errorf("dead-letter %s of %s: %w", id, k.Name, err)
	}
	if n == lua.NackDead {
		w.t.Telemetry.DeadLettered(ctx, 1)
		w.t.Logger.Warn("redelay: item dead-lettered after its last lease expired",
			"queue", k.Name, "id", id, "max_attempts", w.t.MaxAttempts)
	}
	return nil
}
