package blocking

import (
	"context"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/queue"
)

// ErrNotFound: no item with the given ID is where the call looks for it
// (delayed.ErrNotFound and inspect.ErrNotFound are the same error).
var ErrNotFound = queue.ErrNotFound

// Item is one item of a queue as it waits, read without taking it: by
// Peek here, and by the delayed queue's Get and List.
type Item[T any] struct {
	ID    string // the item's ID (generated, or given with WithID)
	Value T      // the decoded value
	// Attempt is how many times the item was delivered so far: 0 for an
	// item never delivered, n for a retry after n failed deliveries (as
	// river counts). A dead letter counts its deliveries on the dead-letter
	// queue; the attempts that brought it there are in HeaderError.
	Attempt    int
	EnqueuedAt time.Time         // when it was first offered (Redis server clock)
	DueAt      time.Time         // when it falls (or fell) due (Redis server clock)
	Headers    map[string]string // the producer's headers; HeaderError holds the last failure
	Priority   int               // 0..MaxPriority (WithPriority)
	Group      string            // the item's group (WithGroup); "" for none
}

// MaxPage bounds one Peek (and the delayed queue's List): at most 1000
// items per call.
const MaxPage = 1000

// ScanLimit bounds the searches by ID that read a list from its start
// (RedriveID here; the inspect package's Get, Delete and Requeue of ready,
// in-flight and dead items): items further back are not found.
const ScanLimit = queue.ScanLimit

// newItem decodes an envelope into an Item.
// item makes the typed item of a stored one.
func item[T any](it queue.Item, v T) Item[T] {
	return Item[T]{
		ID: it.ID, Value: v, Attempt: it.Attempt, EnqueuedAt: it.EnqueuedAt, DueAt: it.DueAt,
		Priority: it.Priority, Group: it.Group, Headers: it.Headers,
	}
}

func checkPage(what string, n int) error {
	if n < 1 || n > MaxPage {
		return fmt.Errorf("%s %d out of range 1..%d: %w", what, n, MaxPage, ErrInvalidArgument)
	}
	return nil
}

// Peek returns up to n of the ready items in the order Take would return
// them (the next one first), without removing or leasing them. O(n). Items
// that cannot be decoded into T are left out and logged (the inspect
// package shows them raw). n must be 1 to MaxPage. On a queue opened
// WithPartitions, Peek reads n items of each partition and returns the n
// first by priority, then due time: each partition hands its own out in
// that order, but which partition a consumer probes first varies.
func (q *Queue[T]) Peek(ctx context.Context, n int) ([]Item[T], error) {
	if err := q.q.Err(); err != nil {
		return nil, err
	}
	if err := checkPage("peek: count", n); err != nil {
		return nil, fmt.Errorf("peek %s: %w", q.Name(), err)
	}
	entries, err := q.q.List(ctx, queue.Ready, 0, n)
	if err != nil {
		return nil, fmt.Errorf("peek %s: %w", q.Name(), err)
	}
	return queue.Items(q.q, entries, false, item[T]), nil
}

// ReceiveBatch is Receive for up to max items at once: it waits until at
// least one item is ready, then leases up to max of the ready ones in one
// round trip, oldest first. Each Delivery is settled on its own (Ack,
// Nack), or together with AckAll. max must be 1 to 256.
func (q *Queue[T]) ReceiveBatch(ctx context.Context, max int) ([]*Delivery[T], error) {
	if max < 1 || max > maxReceive {
		return nil, fmt.Errorf("receive %s: batch of %d out of range 1..%d: %w", q.Name(), max, maxReceive, ErrInvalidArgument)
	}
	return q.receive(ctx, queue.ReceiveRequest{Max: max, Span: true, Batch: true})
}

// TakeBatch is Take for up to max items at once: it waits until at least
// one item is ready, then removes and returns up to max of the ready ones,
// oldest first. Delivery is at most once, as with Take. max must be 1 to
// 256.
func (q *Queue[T]) TakeBatch(ctx context.Context, max int) ([]T, error) {
	if max < 1 || max > maxReceive {
		return nil, fmt.Errorf("take %s: batch of %d out of range 1..%d: %w", q.Name(), max, maxReceive, ErrInvalidArgument)
	}
	var out []T
	_, err := q.q.Take(ctx, queue.TakeRequest{Max: max, Batch: true}, func(_ string, payload []byte) error {
		var v T
		if err := queue.Unmarshal(q.q.Config().Codec, payload, &v); err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Purge drops every ready item and returns how many there were. Items that
// are delayed, waiting for a retry or leased are not touched. On the
// DeadLetters queue, it empties the dead letters. Redis frees the memory
// in the background (UNLINK), so a large purge does not block it.
func (q *Queue[T]) Purge(ctx context.Context) (int64, error) {
	n, err := q.q.Purge(ctx, queue.Ready)
	if err != nil && q.q.Err() == nil {
		return n, fmt.Errorf("purge %s: %w", q.Name(), err)
	}
	return n, err
}

// Stats are a queue's counts by state and its timings, read at one
// instant.
type Stats struct {
	Delayed  int64 // offered with a delay, not yet due (the delayed queue's Size)
	Retry    int64 // failed deliveries waiting for their next attempt
	Ready    int64 // ready to take (Size)
	Inflight int64 // received and not yet settled, or being handed to a consumer
	Dead     int64 // dead letters
	Paused   bool  // Pause is in effect
	// Latency is how long the oldest ready item has waited since it fell
	// due: zero when nothing is ready. It grows when consumers fall
	// behind, are stopped, or the queue is paused: the figure to alert on.
	Latency time.Duration
	// NextDue is when the earliest delayed item or retry falls due; zero
	// when none is pending.
	NextDue time.Time
	// Eviction is the maxmemory-policy of the queue's Redis server (on a
	// Cluster, the first that evicts among the masters'); "" when unknown
	// (the server refuses INFO). Any policy but "noeviction" lets Redis
	// delete the queue's keys when it is full, and items vanish without
	// an error: see docs/reliability.md. It is read once per client, and
	// again when the reading is a minute old: the Stats call that reads
	// it makes one more round trip (INFO, on every master of a Cluster).
	Eviction string
	// Processed counts the items settled successfully since the queue
	// was first used: acked (Delivery.Ack, or a handler of Consume that
	// returned nil) or delivered by Take, Poll and TakeBatch. Failed
	// counts the failed attempts: Nack, a handler's error or panic, an
	// item that could not be decoded, an expired lease. Both are counted
	// by the scripts that settle, once per event even when a call is
	// resent; their rate per minute over the last 24 hours is in
	// inspect's History.
	Processed int64
	Failed    int64
	// DeadDropped counts the dead letters dropped, oldest first, to keep
	// the queue within its bounds (WithDeadLetterBounds); also the
	// counter redelay.messages.dead_dropped.
	DeadDropped int64
}

// Stats reads the queue's counts and timings in one round trip, on the
// Redis server's clock. O(log N).
func (q *Queue[T]) Stats(ctx context.Context) (Stats, error) {
	st, err := q.q.Stats(ctx)
	return Stats(st), err
}

// Pause stops every process from handing out this queue's items: Take,
// Poll, Receive, ReceiveBatch, TakeBatch and Consume wait (they do not
// fail) until Resume. Offers, transfers of due items and the reclaiming of
// expired leases go on, so nothing is late to become ready and nothing is
// lost; handlers already running finish and settle as usual. The flag
// lives in Redis: it holds across restarts until Resume.
//
// Receive and Consume see it on their next round trip (it is checked in
// the same script that leases); Take and Poll within a notification
// (milliseconds), or at the latest within the transfer's sweep interval
// (1 s by default) if the notification is lost. Pausing a paused queue is
// harmless.
func (q *Queue[T]) Pause(ctx context.Context) error {
	if err := q.q.SetPaused(ctx, true); err != nil {
		return fmt.Errorf("pause %s: %w", q.Name(), err)
	}
	return nil
}

// Resume undoes Pause: waiting consumers in every process go on at once
// (within the sweep interval if the notification is lost). Resuming a
// queue that is not paused is harmless.
func (q *Queue[T]) Resume(ctx context.Context) error {
	if err := q.q.SetPaused(ctx, false); err != nil {
		return fmt.Errorf("resume %s: %w", q.Name(), err)
	}
	return nil
}

// RedriveID moves the dead letter with this ID back to this queue, ready
// at once with its attempts reset, as Redrive does for the oldest ones. It
// returns ErrNotFound when no dead letter has this ID among the first
// ScanLimit (the search reads the dead letters in the order the
// dead-letter queue hands them out, in chunks).
func (q *Queue[T]) RedriveID(ctx context.Context, id string) error {
	if err := q.q.Err(); err != nil {
		return err
	}
	if err := queue.CheckID(id); err != nil {
		return fmt.Errorf("redrive %s from %s: %w", id, q.Name(), err)
	}
	return q.q.RedriveID(ctx, id)
}

// The store reads pages of at most store.MaxPage items: this fails to
// compile if the two bounds ever differ, so a page the store would cut
// short is refused here instead.
var _ = [1]struct{}{}[MaxPage-queue.MaxPage]
