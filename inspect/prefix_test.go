package inspect_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// TestPrefix: an Inspector given a key prefix sees the queues of that
// prefix only: their registry, counts, items and pause; one of another
// prefix reads the same name as another queue.
func TestPrefix(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		p := redistest.Prefix(t, rdb)
		redistest.Unregister(t, rdb, name)
		q := blocking.New[string](rdb, name, blocking.WithPrefix(p))
		t.Cleanup(func() { _ = q.Close() })
		plain := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = plain.Close() })
		if _, err := q.Offer(ctx, "prefixed", blocking.WithID("only-here")); err != nil {
			t.Fatal(err)
		}
		if _, _, err := q.Poll(ctx, 0); err != nil { // consumes: announces the queue
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "second"); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Offer(ctx, "plain-1"); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Offer(ctx, "plain-2"); err != nil {
			t.Fatal(err)
		}

		in := inspect.New(rdb, inspect.WithPrefix(p))
		if in.Prefix() != p || inspect.New(rdb).Prefix() != "redelay" {
			t.Errorf("Prefix() = %q and %q", in.Prefix(), inspect.New(rdb).Prefix())
		}
		redistest.WaitFor(t, 5*time.Second, "the queue listed under its prefix", func() bool {
			names, err := in.Queues(ctx)
			return err == nil && slices.Equal(names, []string{name})
		})
		st, err := in.Stats(ctx, name)
		if err != nil || st.Ready != 1 {
			t.Fatalf("Stats under the prefix: %+v, %v; want 1 ready", st, err)
		}
		if st, err := inspect.New(rdb).Stats(ctx, name); err != nil || st.Ready != 2 {
			t.Fatalf("Stats under the default prefix: %+v, %v; want 2 ready", st, err)
		}
		items, err := in.List(ctx, name, inspect.Ready, 0, 10)
		if err != nil || len(items) != 1 || items[0].Value != "second" {
			t.Fatalf("List under the prefix: %+v, %v", items, err)
		}
		if _, err := inspect.New(rdb).Get(ctx, name, "only-here"); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("Get of a prefixed item without the prefix: %v, want ErrNotFound", err)
		}
		if err := in.Pause(ctx, name); err != nil {
			t.Fatal(err)
		}
		if st, err := plain.Stats(ctx); err != nil || st.Paused {
			t.Errorf("pause under the prefix paused the default queue: %+v, %v", st, err)
		}
		if st, err := q.Stats(ctx); err != nil || !st.Paused {
			t.Errorf("pause under the prefix: %+v, %v", st, err)
		}
	})
}

// TestPrefixInvalid: an Inspector with a bad prefix returns
// ErrInvalidQueue from every call, and from Err.
func TestPrefixInvalid(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	for _, p := range []string{"", "a{b", "a b", "x\n", ":x"} {
		in := inspect.New(rdb, inspect.WithPrefix(p))
		if err := in.Err(); !errors.Is(err, inspect.ErrInvalidQueue) {
			t.Errorf("Err with prefix %q: %v", p, err)
		}
		if _, err := in.Queues(ctx); !errors.Is(err, inspect.ErrInvalidQueue) {
			t.Errorf("Queues with prefix %q: %v", p, err)
		}
		if _, err := in.Stats(ctx, "q"); !errors.Is(err, inspect.ErrInvalidQueue) {
			t.Errorf("Stats with prefix %q: %v", p, err)
		}
		if err := in.Pause(ctx, "q"); !errors.Is(err, inspect.ErrInvalidQueue) {
			t.Errorf("Pause with prefix %q: %v", p, err)
		}
	}
	if err := inspect.New(rdb, inspect.WithPrefix("ok")).Err(); err != nil {
		t.Errorf("Err with a good prefix: %v", err)
	}
}
