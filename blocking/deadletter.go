package blocking

import (
	"context"
	"fmt"

	"github.com/redelay/redelay/internal/lua"
)

// redriveBatch bounds one redrive script call.
const redriveBatch = 500

// DeadLetters returns the queue of items that failed for good: out of
// attempts, or undecodable. It is a Queue[T] like any other (Size, Take,
// Receive work on it) whose keys share this queue's hash tag. Each item's
// last failure is in Delivery.Headers[HeaderError]. It is closed with q.
func (q *Queue[T]) DeadLetters() *Queue[T] {
	q.deadOnce.Do(func() { q.dead = &Queue[T]{core: q.core.Child("dead")} })
	return q.dead
}

// Redrive moves up to max dead letters (all of them when max <= 0) back to
// this queue, oldest first, ready at once and with their attempts reset, and
// returns how many moved. Each batch of a few hundred moves atomically.
func (q *Queue[T]) Redrive(ctx context.Context, max int) (int, error) {
	if err := q.core.Err(); err != nil {
		return 0, err
	}
	k := q.core.Keys
	total := 0
	for max <= 0 || total < max {
		batch := redriveBatch
		if max > 0 {
			batch = min(batch, max-total)
		}
		n, err := lua.Redrive.Run(ctx, q.core.RDB, []string{k.Dead().Ready, k.Ready}, batch).Int()
		total += n
		if err != nil {
			return total, fmt.Errorf("redrive %s: %w", q.Name(), err)
		}
		if n < batch {
			break
		}
	}
	return total, nil
}
