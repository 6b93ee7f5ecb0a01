package delayed_test

import (
	"context"
	"errors"
	"hash/fnv"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// TestPartitionRouting: on a partitioned queue, each item is pending in
// the partition of its ID, and Get, Contains, Reschedule, Update, Promote
// and Remove find it there; Size and List see every partition, and
// OfferBatch spreads its generated IDs over all of them.
func TestPartitionRouting(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const n = 4
		q := blocking.New[string](rdb, name, blocking.WithPartitions(n))
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		const items = 40
		for i := range items {
			id := "order-" + strconv.Itoa(i)
			if _, err := dq.Offer(ctx, id, time.Hour+time.Duration(i)*time.Second, delayed.WithID(id)); err != nil {
				t.Fatal(err)
			}
			k := redistest.KeysOf(name).Partition(keys.PartitionOf(id, n))
			if ok, err := rdb.HExists(ctx, k.Items, id).Result(); err != nil || !ok {
				t.Fatalf("%s not pending in partition %d: %v", id, keys.PartitionOf(id, n), err)
			}
		}
		if _, err := dq.Offer(ctx, "dup", time.Hour, delayed.WithID("order-7")); !errors.Is(err, delayed.ErrDuplicate) {
			t.Fatalf("duplicate ID in its partition = %v", err)
		}
		if s, err := dq.Size(ctx); err != nil || s != items {
			t.Fatalf("Size = %d, %v", s, err)
		}
		page, err := dq.List(ctx, 5, 10)
		if err != nil || len(page) != 10 {
			t.Fatalf("List = %d items, %v", len(page), err)
		}
		for i, it := range page {
			if want := "order-" + strconv.Itoa(5+i); it.ID != want {
				t.Fatalf("List[%d] = %s, want %s (due order across partitions)", i, it.ID, want)
			}
		}
		if it, err := dq.Get(ctx, "order-3"); err != nil || it.Value != "order-3" {
			t.Fatalf("Get = %+v, %v", it, err)
		}
		if ok, err := dq.Contains(ctx, "order-4"); err != nil || !ok {
			t.Fatalf("Contains = %v, %v", ok, err)
		}
		if err := dq.Update(ctx, "order-5", "updated"); err != nil {
			t.Fatal(err)
		}
		if err := dq.Reschedule(ctx, "order-6", 2*time.Hour); err != nil {
			t.Fatal(err)
		}
		if ok, err := dq.Remove(ctx, "order-8"); err != nil || !ok {
			t.Fatalf("Remove = %v, %v", ok, err)
		}
		if err := dq.Promote(ctx, "order-5"); err != nil {
			t.Fatal(err)
		}
		v, ok, err := q.Poll(ctx, 5*time.Second)
		if err != nil || !ok || v != "updated" {
			t.Fatalf("Poll after Promote = %q, %v, %v", v, ok, err)
		}
		if _, err := dq.Get(ctx, "order-8"); !errors.Is(err, delayed.ErrNotFound) {
			t.Fatalf("Get of a removed item = %v", err)
		}
		ids, err := dq.OfferBatch(ctx, make([]string, 400), time.Hour)
		if err != nil || len(ids) != 400 {
			t.Fatalf("OfferBatch = %d, %v", len(ids), err)
		}
		for p := range n {
			c, err := rdb.ZCard(ctx, redistest.KeysOf(name).Partition(p).Delayed).Result()
			if err != nil || c < 50 {
				t.Fatalf("partition %d holds %d pending items after a batch of 400, %v", p, c, err)
			}
		}
		if err := dq.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if s, _ := dq.Size(ctx); s != 0 {
			t.Fatalf("Size after Clear = %d", s)
		}
	})
}

// TestPartitionDueInEveryPartition: items due soon in every partition
// all become ready, none early.
func TestPartitionDueInEveryPartition(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n, items = 8, 64
		q := blocking.New[int64](rdb, redistest.QueueName(t), blocking.WithPartitions(n))
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		due := time.Now().Add(300 * time.Millisecond)
		for range items {
			if _, err := dq.OfferAt(ctx, due.UnixMicro(), due); err != nil {
				t.Fatal(err)
			}
		}
		for range items {
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if time.Now().UnixMicro() < v {
				t.Fatal("taken before its due time")
			}
		}
	})
}

// TestPartitionTickByID: a recurring schedule's ticks are materialized in
// partition 0 of a partitioned queue; Get, Contains, Reschedule and Remove
// by a tick's ID find them there. They used to look in the partition the
// ID hashes to, and found nothing three times in four.
func TestPartitionTickByID(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const n, schedules = 4, 8
		q := blocking.New[string](rdb, name, blocking.WithPartitions(n))
		t.Cleanup(func() { _ = q.Close() })
		runner := delayed.New(q) // its transfer materializes the ticks
		for i := range schedules {
			if err := runner.Schedule(ctx, "s"+strconv.Itoa(i), "@every 1s", "tick"); err != nil {
				t.Fatal(err)
			}
		}
		pendingTicks := func(dq *delayed.Queue[string]) map[string][]string {
			items, err := dq.List(ctx, 0, delayed.MaxPage)
			if err != nil {
				t.Fatal(err)
			}
			bySchedule := map[string][]string{}
			for _, it := range items {
				if s := it.Headers[delayed.HeaderSchedule]; s != "" {
					bySchedule[s] = append(bySchedule[s], it.ID)
				}
			}
			return bySchedule
		}
		redistest.WaitFor(t, 10*time.Second, "a pending tick of every schedule", func() bool {
			return len(pendingTicks(runner)) == schedules
		})
		// With no transfer running, the pending ticks stay pending, also
		// once due.
		if err := runner.Close(); err != nil {
			t.Fatal(err)
		}
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close() })
		hashedElsewhere := 0
		for _, ids := range pendingTicks(dq) {
			for _, id := range ids {
				if fnvPartition(id, n) != 0 {
					hashedElsewhere++
				}
				if it, err := dq.Get(ctx, id); err != nil || it.Value != "tick" {
					t.Fatalf("Get(%s) = %+v, %v", id, it, err)
				}
				if ok, err := dq.Contains(ctx, id); err != nil || !ok {
					t.Fatalf("Contains(%s) = %v, %v", id, ok, err)
				}
				if err := dq.Reschedule(ctx, id, time.Hour); err != nil {
					t.Fatalf("Reschedule(%s) = %v", id, err)
				}
				if ok, err := dq.Remove(ctx, id); err != nil || !ok {
					t.Fatalf("Remove(%s) = %v, %v", id, ok, err)
				}
				if _, err := dq.Get(ctx, id); !errors.Is(err, delayed.ErrNotFound) {
					t.Fatalf("Get(%s) after Remove = %v", id, err)
				}
			}
		}
		if hashedElsewhere == 0 {
			t.Fatal("no tick ID hashes outside partition 0: the test shows nothing")
		}
		if s, err := dq.Size(ctx); err != nil || s != 0 {
			t.Fatalf("Size after removing every tick = %d, %v", s, err)
		}
	})
}

// fnvPartition is the partition an ID hashes to (FNV-1a modulo n), as
// keys.PartitionOf routes every ID that is not a tick's.
func fnvPartition(id string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % uint32(n))
}
