package seedtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
)

// The IDs of the items of [EveryState], one per state.
const (
	// Delayed is due in an hour, with the header source=test.
	Delayed = "o-delayed"
	// Retry failed once ("boom") and is retried in an hour.
	Retry = "o-retry"
	// Ready waits, with the header tenant=acme.
	Ready = "o-ready"
	// Inflight is leased for the queue's visibility timeout.
	Inflight = "o-inflight"
	// Dead failed twice ("first", then "fatal") of its 2 attempts.
	Dead = "o-dead"
)

// States is a queue holding one item in every state.
type States[T any] struct {
	// Queue allows 2 attempts.
	Queue *blocking.Queue[T]
	// Delayed is over Queue, without transfer.
	Delayed *delayed.Queue[T]
	// Inflight is the lease of the item Inflight.
	Inflight *blocking.Delivery[T]
}

// EveryState makes the queue name hold one item in every state, the item
// of ID id holding value(id): [Dead], [Retry], [Inflight], [Ready] and
// [Delayed], offered in this order. The queue is opened with
// blocking.WithMaxAttempts(2), then opts; its handles are closed in
// t.Cleanup. EveryState does not wait for the queue to be announced.
func EveryState[T any](t testing.TB, rdb redis.UniversalClient, name string, value func(id string) T, opts ...blocking.Option) *States[T] {
	t.Helper()
	ctx := context.Background()
	s := &States[T]{Queue: blocking.New[T](rdb, name, append([]blocking.Option{blocking.WithMaxAttempts(2)}, opts...)...)}
	t.Cleanup(func() { _ = s.Queue.Close() })
	s.Delayed = delayed.New(s.Queue, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = s.Delayed.Close() })
	offer := func(id string, h map[string]string) {
		t.Helper()
		if _, err := s.Queue.Offer(ctx, value(id), blocking.WithID(id), blocking.WithHeaders(h)); err != nil {
			t.Fatal(err)
		}
	}
	nack := func(d *blocking.Delivery[T], delay time.Duration, why string) {
		t.Helper()
		if err := d.Nack(ctx, delay, blocking.WithReason(errors.New(why))); err != nil {
			t.Fatal(err)
		}
	}
	offer(Dead, nil)
	nack(Receive(ctx, t, s.Queue, Dead), 0, "first") // ready again at once
	nack(Receive(ctx, t, s.Queue, Dead), 0, "fatal") // its last attempt: dead
	offer(Retry, nil)
	nack(Receive(ctx, t, s.Queue, Retry), time.Hour, "boom")
	offer(Inflight, nil)
	s.Inflight = Receive(ctx, t, s.Queue, Inflight)
	offer(Ready, map[string]string{"tenant": "acme"})
	if _, err := s.Delayed.Offer(ctx, value(Delayed), time.Hour, delayed.WithID(Delayed),
		delayed.WithHeaders(map[string]string{"source": "test"})); err != nil {
		t.Fatal(err)
	}
	return s
}

// Receive receives the next item of q and fails t unless its ID is id.
func Receive[T any](ctx context.Context, t testing.TB, q *blocking.Queue[T], id string) *blocking.Delivery[T] {
	t.Helper()
	d, err := q.Receive(ctx)
	if err != nil || d.ID != id {
		t.Fatalf("Receive = %v, %v; want %s", d, err, id)
	}
	return d
}

// DeadLetter offers v to q with the ID id and the headers h, receives it
// and nacks it with reason: a dead letter when q allows one attempt
// (blocking.WithMaxAttempts(1)). It fails t unless the item received is
// id, so q must hold nothing ready before it.
func DeadLetter[T any](ctx context.Context, t testing.TB, q *blocking.Queue[T], id string, v T, h map[string]string, reason string) {
	t.Helper()
	if _, err := q.Offer(ctx, v, blocking.WithID(id), blocking.WithHeaders(h)); err != nil {
		t.Fatal(err)
	}
	if err := Receive(ctx, t, q, id).Nack(ctx, 0, blocking.WithReason(errors.New(reason))); err != nil {
		t.Fatal(err)
	}
}
