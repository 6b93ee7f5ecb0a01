package blocking

import (
	"context"
)

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
	if q.dead == nil {
		q.dead = &Queue[T]{q: q.q.DeadLetters()}
	}
	return q.dead
}

// Redrive moves up to max dead letters (all of them when max <= 0) back to
// this queue, in the order the dead-letter queue would hand them out
// (oldest first, after any of priority it gave back), ready at once, with
// their attempts reset and no deadline (WithTTL: a redriven item starts
// anew), and returns how many moved. Each batch of a few hundred moves atomically.
func (q *Queue[T]) Redrive(ctx context.Context, max int) (int, error) { return q.q.Redrive(ctx, max) }
