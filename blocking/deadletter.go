package blocking

import (
	"context"
	"fmt"

	"github.com/redelay/redelay/internal/queue"
)

// redriveBatch bounds one redrive script call.
const redriveBatch = 500

// DeadLetters returns the queue of items that failed for good: out of
// attempts, dead-lettered by a handler (SkipRetry), past their deadline
// (WithTTL), or bytes that are no envelope. It is a Queue[T] like any
// other (Size, Take, Receive work on it) whose keys share this queue's
// hash tag, except that it expires nothing: a dead letter has no
// deadline. Each item's last failure is in Delivery.Headers[HeaderError].
// It is closed with q. Items that fail for good on the dead-letter queue
// itself (out of attempts there) go to its own dead letters,
// q.DeadLetters().DeadLetters().
func (q *Queue[T]) DeadLetters() *Queue[T] {
	q.deadMu.Lock()
	defer q.deadMu.Unlock()
	if q.dead == nil && q.parts != nil {
		q.dead = q.deadParts()
	}
	if q.dead == nil {
		q.dead = &Queue[T]{core: q.core.Child("dead")}
		if q.core.Err() != nil { // already closed: so is a queue opened from it
			_ = q.dead.core.Close()
		}
	}
	return q.dead
}

// Redrive moves up to max dead letters (all of them when max <= 0) back to
// this queue, in the order the dead-letter queue would hand them out
// (oldest first, after any of priority it gave back), ready at once, with
// their attempts reset and no deadline (WithTTL: a redriven item starts
// anew), and returns how many moved. Each batch of a few hundred moves atomically.
func (q *Queue[T]) Redrive(ctx context.Context, max int) (int, error) {
	if err := q.core.Err(); err != nil {
		return 0, err
	}
	total := 0
	if q.parts != nil {
		return q.redriveParts(ctx, max)
	}
	for max <= 0 || total < max {
		batch := redriveBatch
		if max > 0 {
			batch = min(batch, max-total)
		}
		n, err := queue.Call(ctx, q.core, func(ctx context.Context) (int64, error) {
			return q.core.Store.Redrive(ctx, batch)
		}, nil)
		total += int(n)
		if err != nil {
			return total, fmt.Errorf("redrive %s: %w", q.Name(), err)
		}
		if int(n) < batch {
			break
		}
	}
	return total, nil
}
