package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// deadItems lists the queue's dead letters (the first 100), newest first.
func deadItems(t *testing.T, rdb redis.UniversalClient, name string) []inspect.Item {
	t.Helper()
	items, err := inspect.New(rdb).List(context.Background(), name, inspect.Dead, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	return items
}

// deadIDs lists the IDs of the queue's dead letters, newest first.
func deadIDs(t *testing.T, rdb redis.UniversalClient, name string) []string {
	t.Helper()
	var ids []string
	for _, it := range deadItems(t, rdb, name) {
		ids = append(ids, it.ID)
	}
	return ids
}

// TestDeadLetterBounds: past the count bound the oldest dead letters are
// dropped at once, and past the age bound by the transfer, each counted.
func TestDeadLetterBounds(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1), blocking.WithDeadLetterBounds(3, 0))
		t.Cleanup(func() { _ = q.Close() })
		for i := range 5 {
			if _, err := q.Offer(ctx, "v", blocking.WithID(fmt.Sprint("d", i))); err != nil {
				t.Fatal(err)
			}
			if err := seedtest.ReceiveWithin(t, q, 5*time.Second).Nack(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		st, err := q.Stats(ctx)
		if err != nil || st.Dead != 3 || st.DeadDropped != 2 {
			t.Fatalf("Stats: %+v, %v; want 3 dead, 2 dropped", st, err)
		}
		// The dead-letter list holds the newest first; the oldest went.
		if ids := deadIDs(t, rdb, name); !slices.Equal(ids, []string{"d2", "d3", "d4"}) && !slices.Equal(ids, []string{"d4", "d3", "d2"}) {
			t.Fatalf("dead letters kept: %q, want d2..d4", ids)
		}

		// By age: what died more than 300 ms ago goes.
		aged := redistest.QueueName(t)
		qa := blocking.New[string](rdb, aged, blocking.WithMaxAttempts(1),
			blocking.WithDeadLetterBounds(0, 300*time.Millisecond), blocking.WithSweepInterval(50*time.Millisecond))
		t.Cleanup(func() { _ = qa.Close() })
		for range 2 {
			if _, err := qa.Offer(ctx, "v"); err != nil {
				t.Fatal(err)
			}
			if err := seedtest.ReceiveWithin(t, qa, 5*time.Second).Nack(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		redistest.WaitFor(t, 10*time.Second, "the aged dead letters dropped", func() bool {
			st, err := qa.Stats(ctx)
			return err == nil && st.Dead == 0 && st.DeadDropped == 2
		})
	})
}

// TestDeadLetterBoundsInvalid: negative bounds are a bad option.
func TestDeadLetterBoundsInvalid(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	q := blocking.New[string](rdb, "q", blocking.WithDeadLetterBounds(-1, 0))
	defer q.Close()
	if _, err := q.Offer(context.Background(), "v"); !errors.Is(err, blocking.ErrInvalidQueue) {
		t.Fatalf("Offer: %v, want ErrInvalidQueue", err)
	}
}
