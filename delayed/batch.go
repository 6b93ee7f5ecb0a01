package delayed

import (
	"context"
	"time"
)

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
	var o offerOptions
	o.apply(opts)
	return d.q.OfferBatch(ctx, len(values), func(i int) any { return values[i] }, delay, o.r)
}
