package blocking

import (
	"context"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/queue"
)

// Delivery is an item received with [Queue.Receive]: the value and its
// metadata, leased to the receiver until it calls Ack or Nack or the
// visibility timeout passes.
type Delivery[T any] struct {
	ID         string            // the item's ID (generated, or given with WithID)
	Value      T                 // the decoded value
	Attempt    int               // 1 on first delivery, +1 on each redelivery
	EnqueuedAt time.Time         // when it was first offered (Redis server clock)
	DueAt      time.Time         // when it became due (Redis server clock)
	Headers    map[string]string // the producer's headers; HeaderError holds the last failure
	Priority   int               // 0..MaxPriority (WithPriority)
	Group      string            // the item's group (WithGroup); "" for none

	l *queue.Lease
}

// Receive waits for the oldest ready item and leases it to the caller for
// the visibility timeout (WithVisibilityTimeout): delivery is at least once.
// Settle it with Ack when done, or Nack to retry later; if neither happens
// in time, the item becomes ready again with Attempt+1. When ctx ends,
// Receive returns ctx.Err() (test with errors.Is), and ErrClosed when the
// queue closes meanwhile; a lease it was being given is handed back.
//
// Waiting costs Redis no writes, and each ready item wakes one waiting
// receiver. An item whose reply is lost with the connection is not lost:
// it is leased (and comes back after the visibility timeout) or stays
// claimed (and comes back after about 30 s).
//
// Bytes that are no envelope are moved to the dead letters and logged; an
// item that cannot be decoded (a value of another type, or an envelope
// version this release does not read) is given back for a retry after the
// default backoff, counted as a failed attempt, with the reason in its
// HeaderError. Receive goes on to the next item.
func (q *Queue[T]) Receive(ctx context.Context) (*Delivery[T], error) {
	ds, err := q.receive(ctx, queue.ReceiveRequest{Max: 1, Span: true})
	if err != nil {
		return nil, err
	}
	return ds[0], nil
}

// maxReceive bounds one receive script call.
const maxReceive = queue.MaxBatch

// receive leases up to r.Max items as deliveries of T: an item whose value
// cannot be decoded is failed as an attempt (queue.Queue.Receive).
func (q *Queue[T]) receive(ctx context.Context, r queue.ReceiveRequest) ([]*Delivery[T], error) {
	if r.Backoff == nil {
		r.Backoff = DefaultBackoff
	}
	ds := make([]*Delivery[T], 0, r.Max)
	_, err := q.q.Receive(ctx, r, func(l *queue.Lease) error {
		// Decoded into the delivery itself: one allocation, not two.
		d := &Delivery[T]{
			ID: l.ID, Attempt: l.Attempt, EnqueuedAt: l.EnqueuedAt, DueAt: l.DueAt,
			Headers: l.Headers, Priority: l.Priority, Group: l.Group, l: l,
		}
		if err := queue.Unmarshal(q.q.Config().Codec, l.Payload, &d.Value); err != nil {
			return err
		}
		ds = append(ds, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ds, nil
}

// Ack marks the delivery done: the item is gone for good. It returns an
// error wrapping [ErrLeaseLost] if the lease was lost first (and then the
// item may be delivered again, or already was), or if the delivery was
// already settled, or another Ack or Nack of it is in flight (one of two
// made at once settles it). Ack is idempotent on resend: a reply lost and the
// command sent again does not turn a done ack into ErrLeaseLost. With
// [WithReplicaAck], an error wrapping [ErrNotReplicated] means the ack was
// done on the master but replicas did not confirm it in time: after a
// failover the item may be delivered again.
func (d *Delivery[T]) Ack(ctx context.Context) error { return d.l.Ack(ctx) }

// Nack gives the item back: it becomes ready again after delay, and its
// next delivery has Attempt+1. If this was its last allowed attempt
// (WithMaxAttempts), it goes to the dead letters instead. [WithReason]
// records why. It returns an error wrapping [ErrLeaseLost] if the lease
// was lost first, the delivery was already settled, or another Ack or
// Nack of it is in flight; nothing changes then. A negative delay returns [ErrInvalidArgument]. With
// [WithReplicaAck], an error wrapping [ErrNotReplicated] means the nack
// was done on the master but replicas did not confirm it in time.
func (d *Delivery[T]) Nack(ctx context.Context, delay time.Duration, opts ...NackOption) error {
	var o nackOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := queue.CheckDelay("delay", delay); err != nil {
		return fmt.Errorf("nack %s in %s: %w", d.ID, d.l.Queue(), err)
	}
	reason := "nacked"
	if o.reason != nil {
		reason = o.reason.Error()
	}
	return d.l.Nack(ctx, delay, reason, false)
}

// NackOption configures one Nack.
type NackOption func(*nackOptions)

type nackOptions struct {
	reason error
}

// WithReason records why a delivery failed: err's text goes into the item's
// Headers[HeaderError], seen by its next receiver and kept in the dead
// letters if this was its last attempt. Default "nacked".
func WithReason(err error) NackOption {
	return func(o *nackOptions) { o.reason = err }
}

// Extend keeps the item leased for by more from now (not added to the
// current deadline). Consume calls it for you while a handler runs. It
// returns an error wrapping [ErrLeaseLost] if the lease was already lost or
// the delivery settled, and [ErrInvalidArgument] for a non-positive or
// out-of-range duration.
func (d *Delivery[T]) Extend(ctx context.Context, by time.Duration) error { return d.l.Extend(ctx, by) }

// leases returns the leases of ds.
func leases[T any](ds []*Delivery[T]) []*queue.Lease {
	ls := make([]*queue.Lease, len(ds))
	for i, d := range ds {
		ls[i] = d.l
	}
	return ls
}
