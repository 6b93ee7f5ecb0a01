package inspect_test

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
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// leftovers returns which of the keys a used queue leaves behind exist.
func leftovers(t *testing.T, rdb redis.UniversalClient, k keys.Set) []string {
	t.Helper()
	var out []string
	for _, key := range []string{k.Meta, k.Seq, k.History, k.Seen, k.Dead().Meta, k.Dead().History, k.Ready, k.DeadReady} {
		if n, err := rdb.Exists(context.Background(), key).Result(); err != nil || n == 1 {
			out = append(out, key)
		}
	}
	return out
}

// TestForget: a queue that holds items is refused; once empty, Forget
// leaves no key of it and takes it off the registry.
func TestForget(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
		t.Cleanup(func() { _ = q.Close() })
		for range 2 {
			if _, err := q.Offer(ctx, "v"); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Take(ctx); err != nil {
			t.Fatal(err)
		}
		d, err := q.Receive(ctx) // then a dead letter
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
		in := inspect.New(rdb)
		if err := in.Forget(ctx, name); !errors.Is(err, inspect.ErrNotEmpty) {
			t.Fatalf("Forget of a queue holding a dead letter: %v", err)
		}
		if n, err := q.DeadLetters().Purge(ctx); err != nil || n != 1 {
			t.Fatalf("Purge: %d, %v", n, err)
		}
		k := redistest.KeysOf(name)
		if left := leftovers(t, rdb, k); len(left) == 0 {
			t.Fatal("a used queue left nothing: the test sees no key")
		}
		if err := in.Forget(ctx, name); err != nil {
			t.Fatal(err)
		}
		if left := leftovers(t, rdb, k); len(left) != 0 {
			t.Errorf("keys left after Forget: %q", left)
		}
		if names, err := in.Queues(ctx); err != nil || slices.Contains(names, name) {
			t.Errorf("Queues after Forget: %v, %v", names, err)
		}
		if err := in.Forget(ctx, name); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("Forget of a forgotten queue: %v", err)
		}
	})
}

// TestRetention: a process's sweep forgets the queues of its prefix that
// hold nothing and that no process announced for the retention period,
// and keeps those that hold items or were announced since.
func TestRetention(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		prefix := redistest.Prefix(t, rdb)
		registry := keys.RegistryOf(prefix)
		// Thirty churned queues, used and emptied, one that still holds an
		// item, each last announced long ago.
		var churned []string
		for i := range 30 {
			name := fmt.Sprintf("tenant-%d", i)
			churned = append(churned, name)
			q := blocking.New[string](rdb, name, blocking.WithPrefix(prefix))
			if _, err := q.Offer(ctx, "v"); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Take(ctx); err != nil {
				t.Fatal(err)
			}
			_ = q.Close()
		}
		held := blocking.New[string](rdb, "holds-one", blocking.WithPrefix(prefix))
		if _, err := held.Offer(ctx, "v"); err != nil {
			t.Fatal(err)
		}
		_ = held.Close()
		for _, name := range append(slices.Clone(churned), "holds-one") {
			if err := rdb.ZAdd(ctx, registry, redis.Z{Score: 1, Member: name}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		// A consumer of another queue of the prefix sweeps.
		q := blocking.New[string](rdb, "worker", blocking.WithPrefix(prefix), blocking.WithRetention(time.Second))
		t.Cleanup(func() { _ = q.Close() })
		if _, _, err := q.Poll(ctx, 0); err != nil {
			t.Fatal(err)
		}
		in := inspect.New(rdb, inspect.WithPrefix(prefix))
		redistest.WaitFor(t, 20*time.Second, "the churned queues forgotten", func() bool {
			names, err := in.Queues(ctx)
			return err == nil && slices.Equal(names, []string{"holds-one", "worker"})
		})
		for _, name := range churned {
			k, _ := keys.For(prefix, name)
			if left := leftovers(t, rdb, k); len(left) != 0 {
				t.Fatalf("%s left %q", name, left)
			}
		}
		if st, err := in.Stats(ctx, "holds-one"); err != nil || st.Ready != 1 {
			t.Fatalf("the queue that holds an item: %+v, %v", st, err)
		}
	})
}
