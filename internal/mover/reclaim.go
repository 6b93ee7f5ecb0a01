package mover

import (
	"context"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/store"
)

// reclaim makes items with expired leases ready again, in batches, and
// dead-letters those out of attempts; it also gives back items stranded in
// the claimed list. It returns when the next lease expires, relative to
// now (negative: none held).
func (w *worker) reclaim(ctx context.Context) (time.Duration, error) {
	q := w.t.Queue
	for {
		r, err := call(ctx, w, func(ctx context.Context) (store.Reclaimed, error) {
			return q.Reclaim(ctx, w.t.BatchSize, w.t.MaxAttempts)
		})
		if err != nil {
			return 0, fmt.Errorf("reclaim %s: %w", q.K.Name, err)
		}
		if r.Moved > 0 {
			w.t.Logger.Info("redelay: reclaimed expired leases", "queue", q.K.Name, "items", r.Moved)
		}
		if len(r.Dead) > 0 {
			w.t.Telemetry.DeadLettered(ctx, len(r.Dead))
			// "" stands for an in-flight entry whose ID cannot be read
			// (bytes that are no envelope: corrupt or foreign data).
			ids := make([]string, 0, len(r.Dead))
			for _, id := range r.Dead {
				if id != "" {
					ids = append(ids, id)
				}
			}
			if len(ids) > 0 {
				w.t.Logger.Warn("redelay: items dead-lettered after their last lease expired",
					"queue", q.K.Name, "ids", ids, "max_attempts", r.MaxAttempts)
			}
			if n := len(r.Dead) - len(ids); n > 0 {
				w.t.Logger.Warn("redelay: in-flight entries with no readable ID dead-lettered as they were (corrupt or foreign data)",
					"queue", q.K.Name, "entries", n)
			}
		}
		if r.GivenBack > 0 {
			w.t.Logger.Warn("redelay: gave back items a waiting consumer claimed but never took (its connection was lost)",
				"queue", q.K.Name, "items", r.GivenBack)
		}
		if int(r.Moved)+len(r.Dead) >= w.t.BatchSize {
			continue
		}
		if r.NextLease < 0 {
			return -1, nil
		}
		return time.Duration(r.NextLease-r.NowMs) * time.Millisecond, nil
	}
}
