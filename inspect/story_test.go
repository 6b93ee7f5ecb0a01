package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// deadItem waits for the queue's one dead letter and returns it.
func deadItem(t *testing.T, in *inspect.Inspector, name string) inspect.Item {
	t.Helper()
	var items []inspect.Item
	redistest.WaitFor(t, 15*time.Second, "a dead letter", func() bool {
		var err error
		items, err = in.List(context.Background(), name, inspect.Dead, 0, 10)
		return err == nil && len(items) == 1
	})
	return items[0]
}

// TestDeadLetterStory: a dead letter says how many deliveries it had, when
// it died, and the error of each attempt, newest last; the last one stays
// in HeaderError.
func TestDeadLetterStory(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		before := seedtest.Story(t, rdb, name)
		in := inspect.New(rdb)
		it := deadItem(t, in, name)
		if it.Attempt != 3 {
			t.Errorf("Attempt %d, want 3 (deliveries before it died)", it.Attempt)
		}
		if it.DeadAt.Before(before) || it.DeadAt.After(time.Now().Add(time.Second)) {
			t.Errorf("DeadAt %v, want between %v and now", it.DeadAt, before)
		}
		if want := []string{"boom 1", "boom 2", "boom 3"}; !slices.Equal(it.Errors, want) {
			t.Errorf("Errors %q, want %q", it.Errors, want)
		}
		if h := it.Headers[blocking.HeaderError]; !strings.HasPrefix(h, "boom 3") || !strings.Contains(h, "attempt 3 of 3") {
			t.Errorf("HeaderError %q", h)
		}
		got, err := in.Get(ctx, name, "story")
		if err != nil || got.Attempt != 3 || !got.DeadAt.Equal(it.DeadAt) || len(got.Errors) != 3 {
			t.Errorf("Get: %+v, %v", got, err)
		}
	})
}

// TestDeadLetterStoryExpiredLeases: leases that expire are failed attempts
// with the error "lease expired"; more than 10 failures keep the last 10.
func TestDeadLetterStoryExpiredLeases(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(12),
		blocking.WithVisibilityTimeout(100*time.Millisecond), blocking.WithSweepInterval(20*time.Millisecond))
	t.Cleanup(func() { _ = q.Close() })
	if _, err := q.Offer(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	// Ten nacks with their own reasons, then two leases left to expire.
	for i := 1; i <= 10; i++ {
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if err := d.Nack(ctx, 0, blocking.WithReason(fmt.Errorf("nack %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	seedtest.ReceiveWithin(t, q, 5*time.Second)
	seedtest.ReceiveWithin(t, q, 5*time.Second)
	it := deadItem(t, inspect.New(rdb), name)
	want := []string{"nack 3", "nack 4", "nack 5", "nack 6", "nack 7", "nack 8", "nack 9", "nack 10", "lease expired", "lease expired"}
	if !slices.Equal(it.Errors, want) {
		t.Errorf("Errors %q, want %q", it.Errors, want)
	}
	if it.Attempt != 12 || it.DeadAt.IsZero() {
		t.Errorf("Attempt %d, DeadAt %v; want 12 and a time", it.Attempt, it.DeadAt)
	}
	if h := it.Headers[blocking.HeaderError]; h != "lease expired on attempt 12 of 12" {
		t.Errorf("HeaderError %q", h)
	}
}

// TestDeadLetterStoryExpiredTTL: an item past its TTL is dead-lettered with
// the error "expired" after the deliveries it had (none here).
func TestDeadLetterStoryExpiredTTL(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	if _, err := q.Offer(ctx, "v", blocking.WithTTL(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if d, err := q.Receive(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive of an expired item: %v, %v", d, err)
	}
	it := deadItem(t, inspect.New(rdb), name)
	if !slices.Equal(it.Errors, []string{"expired"}) || it.Attempt != 0 || it.DeadAt.IsZero() {
		t.Errorf("Errors %q, Attempt %d, DeadAt %v", it.Errors, it.Attempt, it.DeadAt)
	}
}
