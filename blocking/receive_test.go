package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// keyLen reads the length of one of the queue's keys directly.
func keyLen(t *testing.T, rdb redis.UniversalClient, name, key string) int64 {
	t.Helper()
	k := fmt.Sprintf("redelay:{%s}:%s", name, key)
	var n int64
	var err error
	switch typ := rdb.Type(context.Background(), k).Val(); typ {
	case "list":
		n, err = rdb.LLen(context.Background(), k).Result()
	case "zset":
		n, err = rdb.ZCard(context.Background(), k).Result()
	case "hash":
		n, err = rdb.HLen(context.Background(), k).Result()
	case "none":
	default:
		t.Fatalf("%s has type %s", k, typ)
	}
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestReceiveAck(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		before := time.Now().Add(-time.Second)
		if _, err := q.Offer(ctx, "job"); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if d.Value != "job" || d.Attempt != 1 || d.ID == "" || d.EnqueuedAt.Before(before) || d.DueAt.Before(d.EnqueuedAt) {
			t.Fatalf("delivery = %+v", d)
		}
		if n := keyLen(t, rdb, name, "leases"); n != 1 {
			t.Fatalf("leases = %d", n)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.Ack(ctx); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("second Ack = %v, want ErrLeaseLost", err)
		}
		if err := d.Nack(ctx, 0); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("Nack after Ack = %v, want ErrLeaseLost", err)
		}
		for _, key := range []string{"leases", "inflight", "ready", "delayed"} {
			if n := keyLen(t, rdb, name, key); n != 0 {
				t.Fatalf("%s holds %d after Ack", key, n)
			}
		}
		seedtest.ExpectNothing(t, q, 300*time.Millisecond)
	})
}

// Nack retries with Attempt+1 until MaxAttempts, then dead-letters with the
// reason; Redrive brings dead letters back with their attempts reset.
func TestNackToDeadLettersAndRedrive(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxAttempts(3))
		defer q.Close()
		if _, err := q.Offer(ctx, "flaky"); err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 3; attempt++ {
			start := time.Now()
			d := seedtest.ReceiveWithin(t, q, 5*time.Second)
			if d.Attempt != attempt {
				t.Fatalf("attempt = %d, want %d", d.Attempt, attempt)
			}
			if attempt > 1 {
				if time.Since(start) < 90*time.Millisecond {
					t.Fatalf("retry arrived before its nack delay")
				}
				if d.Headers[blocking.HeaderError] != "nacked" {
					t.Fatalf("headers = %v", d.Headers)
				}
			}
			if err := d.Nack(ctx, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		seedtest.ExpectNothing(t, q, 400*time.Millisecond)

		dead := q.DeadLetters()
		if n, err := dead.Size(ctx); err != nil || n != 1 {
			t.Fatalf("dead letters = %d, %v", n, err)
		}
		dd := seedtest.ReceiveWithin(t, dead, 5*time.Second)
		if dd.Value != "flaky" || !strings.Contains(dd.Headers[blocking.HeaderError], "attempt 3 of 3") {
			t.Fatalf("dead letter = %q, headers %v", dd.Value, dd.Headers)
		}
		if err := dd.Nack(ctx, 0, blocking.WithReason(errors.New("checked by hand"))); err != nil { // back onto the dead-letter queue
			t.Fatal(err)
		}
		if dd = seedtest.ReceiveWithin(t, dead, 5*time.Second); dd.Headers[blocking.HeaderError] != "checked by hand" || dd.Attempt != 2 {
			t.Fatalf("dead letter after Nack WithReason: attempt %d, headers %v", dd.Attempt, dd.Headers)
		}
		if err := dd.Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
		n, err := q.Redrive(ctx, 0)
		if err != nil || n != 1 {
			t.Fatalf("Redrive = %d, %v", n, err)
		}
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if d.Value != "flaky" || d.Attempt != 1 {
			t.Fatalf("redriven delivery = %q attempt %d", d.Value, d.Attempt)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRedriveInBulk(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxAttempts(1))
		defer q.Close()
		const n = 1200
		for i := range n {
			if _, err := q.Offer(ctx, fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			if err := seedtest.ReceiveWithin(t, q, 5*time.Second).Nack(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		if got, _ := q.DeadLetters().Size(ctx); got != n {
			t.Fatalf("dead letters = %d", got)
		}
		if moved, err := q.Redrive(ctx, 700); err != nil || moved != 700 {
			t.Fatalf("Redrive(700) = %d, %v", moved, err)
		}
		if moved, err := q.Redrive(ctx, -1); err != nil || moved != n-700 {
			t.Fatalf("Redrive(all) = %d, %v", moved, err)
		}
		// Oldest dead letter first.
		if d := seedtest.ReceiveWithin(t, q, 5*time.Second); d.Value != "0" || d.Attempt != 1 {
			t.Fatalf("first redriven = %q attempt %d", d.Value, d.Attempt)
		}
	})
}

// A receiver that neither acks nor nacks loses its lease after the
// visibility timeout; the item comes back with Attempt 2, and the first
// receiver's late Ack, Nack or Extend changes nothing.
func TestLeaseExpires(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithVisibilityTimeout(300*time.Millisecond))
		defer q.Close()
		if _, err := q.Offer(ctx, "slow"); err != nil {
			t.Fatal(err)
		}
		first := seedtest.ReceiveWithin(t, q, 5*time.Second)
		start := time.Now()
		second := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if waited := time.Since(start); waited < 250*time.Millisecond {
			t.Fatalf("redelivered after %v, before the visibility timeout", waited)
		}
		if second.Attempt != 2 || second.ID != first.ID {
			t.Fatalf("redelivery = %+v", second)
		}
		for name, err := range map[string]error{
			"Ack":    first.Ack(ctx),
			"Nack":   first.Nack(ctx, 0),
			"Extend": first.Extend(ctx, time.Second),
		} {
			if !errors.Is(err, blocking.ErrLeaseLost) {
				t.Errorf("late %s = %v, want ErrLeaseLost", name, err)
			}
		}
		if err := second.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestExtendKeepsLease(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithVisibilityTimeout(300*time.Millisecond))
		defer q.Close()
		if _, err := q.Offer(ctx, "long"); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					if err := d.Extend(ctx, 300*time.Millisecond); err != nil {
						t.Error(err)
						return
					}
				}
			}
		})
		seedtest.ExpectNothing(t, q, 1200*time.Millisecond)
		close(stop)
		wg.Wait()
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.Extend(ctx, -time.Second); err == nil {
			t.Fatal("Extend with a negative duration returned no error")
		}
	})
}

// Leases that expire on the last attempt are dead-lettered by the reclaimer.
func TestExpiredOnLastAttemptIsDeadLettered(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t),
			blocking.WithVisibilityTimeout(150*time.Millisecond), blocking.WithMaxAttempts(2))
		defer q.Close()
		if _, err := q.Offer(ctx, "hangs"); err != nil {
			t.Fatal(err)
		}
		seedtest.ReceiveWithin(t, q, 5*time.Second)
		if d := seedtest.ReceiveWithin(t, q, 5*time.Second); d.Attempt != 2 {
			t.Fatalf("attempt = %d", d.Attempt)
		}
		dd := seedtest.ReceiveWithin(t, q.DeadLetters(), 5*time.Second)
		if want := "lease expired on attempt 2 of 2"; dd.Headers[blocking.HeaderError] != want {
			t.Fatalf("dead letter headers = %v, want %q", dd.Headers, want)
		}
		if err := dd.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		seedtest.ExpectNothing(t, q, 300*time.Millisecond)
	})
}

// Bytes that are no envelope go to the dead letters at once; an item of
// another type is a failed attempt, retried later with the reason in its
// headers. Receive goes on to the next item.
func TestReceivePoison(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		if err := rdb.LPush(ctx, k.Ready, "garbage").Err(); err != nil {
			t.Fatal(err)
		}
		ints := blocking.New[int](rdb, name)
		defer ints.Close()
		if _, err := ints.Offer(ctx, 42); err != nil {
			t.Fatal(err)
		}
		q := blocking.New[string](rdb, name)
		defer q.Close()
		if _, err := q.Offer(ctx, "good"); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if d.Value != "good" {
			t.Fatalf("got %q", d.Value)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := q.DeadLetters().Size(ctx); n != 1 {
			t.Fatalf("dead letters = %d, want 1 (the bytes that are no envelope)", n)
		}
		if raw, _ := rdb.LIndex(ctx, k.DeadReady, 0).Result(); raw != "garbage" {
			t.Fatalf("dead letter = %q, want the bytes as they were", raw)
		}
		// The int is a retry, its failure counted and explained; a consumer
		// of the right type gets it.
		if n := keyLen(t, rdb, name, "retry"); n != 1 {
			t.Fatalf("retries = %d, want 1", n)
		}
		if _, err := rdb.ZAdd(ctx, k.Retry, redis.Z{Score: 0, Member: mustZMember(t, rdb, k.Retry)}).Result(); err != nil {
			t.Fatal(err) // due now
		}
		di := seedtest.ReceiveWithin(t, ints, 5*time.Second)
		if di.Value != 42 || di.Attempt != 2 || !strings.Contains(di.Headers[blocking.HeaderError], "decode") {
			t.Fatalf("retried item = %d, attempt %d, error %q", di.Value, di.Attempt, di.Headers[blocking.HeaderError])
		}
		_ = di.Ack(ctx)
		if n := keyLen(t, rdb, name, "leases"); n != 0 {
			t.Fatalf("leases left behind: %d", n)
		}
	})
}

// mustZMember returns the only member of a sorted set.
func mustZMember(t *testing.T, rdb redis.UniversalClient, key string) string {
	t.Helper()
	ms, err := rdb.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil || len(ms) != 1 {
		t.Fatalf("ZRANGE %s = %q, %v", key, ms, err)
	}
	return ms[0]
}

func TestInvalidOptionsAtLeastOnce(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	for name, q := range map[string]*blocking.Queue[int]{
		"visibility": blocking.New[int](rdb, "q", blocking.WithVisibilityTimeout(time.Millisecond)),
		"attempts":   blocking.New[int](rdb, "q", blocking.WithMaxAttempts(0)),
	} {
		if _, err := q.Receive(context.Background()); !errors.Is(err, blocking.ErrInvalidQueue) {
			t.Errorf("%s: Receive = %v", name, err)
		}
	}
	q := blocking.New[int](rdb, "q")
	defer q.Close()
	h := func(context.Context, *blocking.Delivery[int]) error { return nil }
	for name, err := range map[string]error{
		"concurrency": q.Consume(context.Background(), h, blocking.WithConcurrency(0)),
		"backoff":     q.Consume(context.Background(), h, blocking.WithBackoff(nil)),
		"handler":     q.Consume(context.Background(), nil),
	} {
		if !errors.Is(err, blocking.ErrInvalidArgument) || errors.Is(err, blocking.ErrInvalidQueue) {
			t.Errorf("%s: Consume = %v, want ErrInvalidArgument", name, err)
		}
	}
}

// Dead letters of dead letters exist, and Close stops every level's work.
func TestCloseClosesDeadLetterChain(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxAttempts(1))
	if _, err := q.Offer(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := seedtest.ReceiveWithin(t, q, 5*time.Second).Nack(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if err := seedtest.ReceiveWithin(t, q.DeadLetters(), 5*time.Second).Nack(ctx, 0); err != nil {
		t.Fatal(err)
	}
	deeper := q.DeadLetters().DeadLetters()
	d := seedtest.ReceiveWithin(t, deeper, 5*time.Second) // starts a transfer for the third level
	if d.Value != "x" {
		t.Fatalf("got %q", d.Value)
	}
	_ = d.Ack(ctx)
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := deeper.Receive(ctx); !errors.Is(err, blocking.ErrClosed) {
		t.Fatalf("Receive on a closed chain = %v", err)
	}
	// TestMain's leak check fails the run if any level's worker survived.
}

// Two settlements of one delivery at once (an Ack and a Nack from two
// goroutines): one of them settles it, the other returns ErrLeaseLost, as
// a second settlement after the first would. Before the fix both returned
// nil in most tries, and when the Nack ran first the item came back
// though the Ack had said it was done.
func TestConcurrentSettlementsOneWins(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[int](rdb, redistest.QueueName(t))
	defer q.Close()
	for i := range 30 {
		if _, err := q.Offer(ctx, i); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		var ackErr, nackErr error
		var wg sync.WaitGroup
		wg.Go(func() { ackErr = d.Ack(ctx) })
		wg.Go(func() { nackErr = d.Nack(ctx, 0) })
		wg.Wait()
		if (ackErr == nil) == (nackErr == nil) {
			t.Fatalf("try %d: Ack = %v, Nack = %v; want one nil, one ErrLeaseLost", i, ackErr, nackErr)
		}
		if err := errors.Join(ackErr, nackErr); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("try %d: the losing settlement returned %v, want ErrLeaseLost", i, err)
		}
		if nackErr == nil { // the item is back: take it out for the next try
			d := seedtest.ReceiveWithin(t, q, 5*time.Second)
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if n, _ := q.Size(ctx); n != 0 {
			t.Fatalf("try %d: %d items ready after the settlements", i, n)
		}
	}
}
