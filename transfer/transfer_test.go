package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/transfer"
)

// Run alone moves a queue's due items and reclaims its expired leases,
// dead-lettering at the max attempts the consumers recorded: no process
// consumes or holds a delayed queue meanwhile.
func TestRun(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)

		// A consumer that leases one item and goes away without settling
		// it; it records max attempts 2 for the queue.
		consumer := blocking.New[string](redistest.NewClientLike(t, rdb), name,
			blocking.WithVisibilityTimeout(100*time.Millisecond), blocking.WithMaxAttempts(2))
		if _, err := consumer.Offer(ctx, "leased"); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		d, err := consumer.Receive(rctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		_ = consumer.Close()

		// A producer that does not transfer.
		q := blocking.New[string](rdb, name)
		dq := delayed.New(q, delayed.WithoutTransfer())
		for _, delay := range []time.Duration{50 * time.Millisecond, 100 * time.Millisecond} {
			if _, err := dq.Offer(ctx, "due", delay); err != nil {
				t.Fatal(err)
			}
		}

		rctx, stop := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			errc <- transfer.Run(rctx, rdb, []string{name}, transfer.WithSweepInterval(50*time.Millisecond))
		}()
		// Both due items move, and the expired lease (attempt 1 of 2)
		// makes its item ready again.
		redistest.WaitFor(t, 5*time.Second, "due items and the reclaimed lease ready", func() bool {
			return rdb.LLen(ctx, k.Ready).Val() == 3 && rdb.ZCard(ctx, k.Leases).Val() == 0
		})
		stop()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run = %v, want context.Canceled", err)
		}
		if n := rdb.ZCard(ctx, k.Delayed).Val(); n != 0 {
			t.Fatalf("%d still pending", n)
		}

		// Received again and abandoned: on its second (last) attempt the
		// sidecar dead-letters it, with the queue's limit.
		consumer2 := blocking.New[string](redistest.NewClientLike(t, rdb), name, blocking.WithVisibilityTimeout(100*time.Millisecond))
		for range 3 {
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			got, err := consumer2.Receive(rctx)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != d.ID {
				_ = got.Ack(ctx)
			} else if got.Attempt != 2 {
				t.Fatalf("the reclaimed item came back as attempt %d", got.Attempt)
			}
		}
		_ = consumer2.Close()
		rctx, stop = context.WithCancel(ctx)
		go func() {
			errc <- transfer.Run(rctx, rdb, []string{name}, transfer.WithSweepInterval(50*time.Millisecond))
		}()
		redistest.WaitFor(t, 5*time.Second, "dead-lettered on its last attempt", func() bool { return rdb.LLen(ctx, k.DeadReady).Val() == 1 })
		stop()
		<-errc
	})
}

// Bad arguments are refused at once with ErrInvalidQueue.
func TestRunInvalid(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	ctx := context.Background()
	for name, err := range map[string]error{
		"nil client": transfer.Run(ctx, nil, []string{"q"}),
		"ring":       transfer.Run(ctx, ring, []string{"q"}),
		"no queue":   transfer.Run(ctx, rdb, nil),
		"bad name":   transfer.Run(ctx, rdb, []string{"a{b}"}),
		"batch":      transfer.Run(ctx, rdb, []string{"q"}, transfer.WithBatchSize(0)),
		"sweep":      transfer.Run(ctx, rdb, []string{"q"}, transfer.WithSweepInterval(0)),
		"logger":     transfer.Run(ctx, rdb, []string{"q"}, transfer.WithLogger(nil)),
	} {
		if !errors.Is(err, transfer.ErrInvalidQueue) {
			t.Errorf("%s: Run = %v, want ErrInvalidQueue", name, err)
		}
	}
}

// Run transfers every partition of a queue opened WithPartitions, reading
// their number from Redis.
func TestRunPartitions(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[int](rdb, name, blocking.WithPartitions(8))
		dq := delayed.New(q, delayed.WithoutTransfer())
		if _, err := dq.OfferBatch(ctx, make([]int, 200), 50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- transfer.Run(rctx, rdb, []string{name}) }()
		redistest.WaitFor(t, 10*time.Second, "every partition's items moved", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Ready == 200 && st.Delayed == 0
		})
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	})
}
