package inspect_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// TestPartitionedQueue: the inspector shows a partitioned queue as one
// logical queue: listed once, its counts summed over the partitions, its
// pages merged, and its items found, changed and purged by ID in their
// partitions.
func TestPartitionedQueue(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const n = 4
		q := blocking.New[string](rdb, name, blocking.WithPartitions(n), blocking.WithMaxAttempts(2))
		t.Cleanup(func() { _ = q.Close() })
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close() })
		offer := func(id string) {
			t.Helper()
			if _, err := q.Offer(ctx, id, blocking.WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		receive := func(id string) *blocking.Delivery[string] {
			t.Helper()
			d, err := q.Receive(ctx)
			if err != nil || d.ID != id {
				t.Fatalf("Receive = %v, %v; want %s", d, err, id)
			}
			return d
		}
		offer("o-dead")
		_ = receive("o-dead").Nack(ctx, 0)
		_ = receive("o-dead").Nack(ctx, 0)
		offer("o-retry")
		_ = receive("o-retry").Nack(ctx, time.Hour)
		offer("o-inflight")
		receive("o-inflight")
		if _, err := dq.Offer(ctx, "o-delayed", time.Hour, delayed.WithID("o-delayed")); err != nil {
			t.Fatal(err)
		}
		const ready = 12
		used := map[int]bool{}
		for i := range ready {
			id := "r" + strconv.Itoa(i)
			used[keys.PartitionOf(id, n)] = true
			offer(id)
		}
		if len(used) < 3 {
			t.Fatalf("ready items in %d partitions only", len(used))
		}

		in := inspect.New(rdb)
		redistest.WaitFor(t, 10*time.Second, "the queue announced", func() bool {
			names, err := in.Queues(ctx)
			return err == nil && slices.Contains(names, name)
		})
		names, _ := in.Queues(ctx)
		for _, nm := range names {
			if strings.HasPrefix(nm, name) && nm != name {
				t.Fatalf("registry lists %q besides %q", nm, name)
			}
		}
		st, err := in.Stats(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != ready || st.Inflight != 1 || st.Dead != 1 || st.Retry != 1 || st.Delayed != 1 {
			t.Fatalf("Stats = %+v", st)
		}
		all, err := in.List(ctx, name, inspect.Ready, 0, 100)
		if err != nil || len(all) != ready {
			t.Fatalf("List(ready) = %d items, %v", len(all), err)
		}
		page, err := in.List(ctx, name, inspect.Ready, 3, 5)
		if err != nil || len(page) != 5 || page[0].ID != all[3].ID || page[4].ID != all[7].ID {
			t.Fatalf("List(ready, 3, 5) = %v, %v; not the merged order", page, err)
		}
		for i := 1; i < len(all); i++ {
			if all[i].DueAt.Before(all[i-1].DueAt) {
				t.Fatalf("List(ready) not in due order at %d", i)
			}
		}
		for id, want := range map[string]inspect.State{
			"o-dead": inspect.Dead, "o-retry": inspect.Retry, "o-inflight": inspect.Inflight,
			"o-delayed": inspect.Delayed, "r7": inspect.Ready,
		} {
			it, err := in.Get(ctx, name, id)
			if err != nil || it.State != want {
				t.Fatalf("Get(%s) = %+v, %v; want state %s", id, it, err, want)
			}
		}
		if err := in.Delete(ctx, name, "r7"); err != nil {
			t.Fatal(err)
		}
		if _, err := in.Get(ctx, name, "r7"); !errors.Is(err, inspect.ErrNotFound) {
			t.Fatalf("Get after Delete = %v", err)
		}
		if err := in.Promote(ctx, name, "o-delayed"); err != nil {
			t.Fatal(err)
		}
		if err := in.Reschedule(ctx, name, "o-retry", time.Now().Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := in.Requeue(ctx, name, "o-dead"); err != nil {
			t.Fatal(err)
		}
		if err := in.Pause(ctx, name); err != nil {
			t.Fatal(err)
		}
		if st, _ := in.Stats(ctx, name); !st.Paused {
			t.Fatal("not paused")
		}
		if err := in.Resume(ctx, name); err != nil {
			t.Fatal(err)
		}
		// 12 ready - r7 + o-delayed + o-dead.
		if got, err := in.Purge(ctx, name, inspect.Ready); err != nil || got != ready+1 {
			t.Fatalf("Purge(ready) = %d, %v; want %d", got, err, ready+1)
		}
		if st, _ := in.Stats(ctx, name); st.Ready != 0 || st.Paused || st.Retry != 1 {
			t.Fatalf("Stats after = %+v", st)
		}
	})
}
