package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// This file proves WithMaxSize: concurrent producers never take a queue
// past its bound, a refused offer stores nothing and wraps ErrQueueFull,
// OfferBatch fits as a whole or not at all, and items already in the queue
// (a Nack, a replacing offer) are never refused.

// msCount is what the bound counts, read from Redis: pending (delayed and
// retry) plus ready.
func msCount(t *testing.T, rdb redis.UniversalClient, name string) int64 {
	t.Helper()
	ctx := context.Background()
	k := redistest.KeysOf(name)
	n := rdb.ZCard(ctx, k.Delayed).Val() + rdb.ZCard(ctx, k.Retry).Val() + rdb.LLen(ctx, k.Ready).Val()
	if p := rdb.ZCard(ctx, k.Prio).Val(); p > 0 {
		n += p - 1 // the marker at the ready list's tail
	}
	return n
}

func TestMaxSizeConcurrentProducers(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const bound, producers, each = 40, 8, 25
		// Each producer has a queue (and so a combiner) of its own, as
		// separate processes would; half offer ready items, half delayed
		// ones, some of priority.
		var accepted, refused sync.Map
		var wg sync.WaitGroup
		for p := range producers {
			q := blocking.New[string](redistest.NewClientLike(t, rdb), name, blocking.WithMaxSize(bound))
			dq := delayed.New(q)
			t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
			wg.Go(func() {
				for i := range each {
					v := fmt.Sprintf("p%d-%d", p, i)
					var id string
					var err error
					switch (p + i) % 3 {
					case 0:
						id, err = q.Offer(ctx, v)
					case 1:
						id, err = q.Offer(ctx, v, blocking.WithPriority(3))
					default:
						id, err = dq.Offer(ctx, v, time.Hour)
					}
					switch {
					case err == nil:
						accepted.Store(v, id)
					case errors.Is(err, blocking.ErrQueueFull) && errors.Is(err, delayed.ErrQueueFull):
						if id != "" {
							t.Errorf("refused offer %s returned ID %q", v, id)
						}
						refused.Store(v, err)
					default:
						t.Errorf("offer %s: %v", v, err)
					}
				}
			})
		}
		wg.Wait()
		var nAcc, nRef int
		accepted.Range(func(any, any) bool { nAcc++; return true })
		refused.Range(func(k, v any) bool {
			nRef++
			if nRef == 1 {
				t.Logf("a refused offer: %v", v)
			}
			return true
		})
		if nAcc != bound || nRef != producers*each-bound {
			t.Fatalf("%d offers accepted, %d refused; want %d and %d", nAcc, nRef, bound, producers*each-bound)
		}
		if got := msCount(t, rdb, name); got != bound {
			t.Fatalf("Redis holds %d items, want %d", got, bound)
		}
		// Refused offers stored nothing: every stored item is an accepted one.
		q := blocking.New[string](rdb, name, blocking.WithMaxSize(bound))
		defer q.Close()
		dq := delayed.New(q)
		defer dq.Close()
		ready, err := q.Peek(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		pending, err := dq.List(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range ready {
			if _, ok := accepted.Load(it.Value); !ok {
				t.Errorf("ready item %q was refused", it.Value)
			}
		}
		for _, it := range pending {
			if _, ok := accepted.Load(it.Value); !ok {
				t.Errorf("pending item %q was refused", it.Value)
			}
		}
		if len(ready)+len(pending) != bound {
			t.Errorf("%d ready + %d pending, want %d", len(ready), len(pending), bound)
		}
		// Taking makes room again, for exactly as many.
		for range 3 {
			if _, err := q.Take(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 3 {
			if _, err := q.Offer(ctx, fmt.Sprint("again", i)); err != nil {
				t.Fatalf("offer after take: %v", err)
			}
		}
		if _, err := q.Offer(ctx, "one too many"); !errors.Is(err, blocking.ErrQueueFull) {
			t.Fatalf("offer past the bound: %v, want ErrQueueFull", err)
		}
	})
}

func TestMaxSizeBatchAllOrNothing(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const bound = 1500
		q := blocking.New[int](rdb, name, blocking.WithMaxSize(bound))
		defer q.Close()
		dq := delayed.New(q)
		defer dq.Close()
		vals := func(n int) []int { return make([]int, n) }
		if ids, err := dq.OfferBatch(ctx, vals(300), time.Hour); err != nil || len(ids) != 300 {
			t.Fatalf("first batch: %d ids, %v", len(ids), err)
		}
		// 1,201 items in three chunks would go past the bound by one: none
		// is stored.
		ids, err := dq.OfferBatch(ctx, vals(1201), time.Hour)
		if !errors.Is(err, delayed.ErrQueueFull) || len(ids) != 0 {
			t.Fatalf("batch past the bound: %d ids, %v; want none and ErrQueueFull", len(ids), err)
		}
		if got := msCount(t, rdb, name); got != 300 {
			t.Fatalf("after a refused batch Redis holds %d items, want 300", got)
		}
		if pass, _ := rdb.Keys(ctx, "redelay:{"+name+"}:batch:*").Result(); len(pass) != 0 {
			t.Errorf("a refused batch left %v", pass)
		}
		// 1,200 fit exactly, in three chunks; due at once, they go ready.
		if ids, err := dq.OfferBatch(ctx, vals(1200), 0); err != nil || len(ids) != 1200 {
			t.Fatalf("batch up to the bound: %d ids, %v", len(ids), err)
		}
		if got := msCount(t, rdb, name); got != bound {
			t.Fatalf("Redis holds %d items, want %d", got, bound)
		}
		if pass, _ := rdb.Keys(ctx, "redelay:{"+name+"}:batch:*").Result(); len(pass) != 0 {
			t.Errorf("an accepted batch left %v", pass)
		}
		if ids, err := dq.OfferBatch(ctx, vals(1), 0); !errors.Is(err, delayed.ErrQueueFull) || len(ids) != 0 {
			t.Fatalf("batch of one at the bound: %d ids, %v", len(ids), err)
		}
	})
}

func TestMaxSizeKeepsWhatIsQueued(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxSize(2))
		defer q.Close()
		dq := delayed.New(q)
		defer dq.Close()
		if _, err := dq.Offer(ctx, "a", time.Hour, delayed.WithID("a")); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		// Full. Replacing a pending item adds nothing: accepted.
		if _, err := dq.Offer(ctx, "a2", time.Hour, delayed.WithID("a"), delayed.WithReplace()); err != nil {
			t.Fatalf("replace at the bound: %v", err)
		}
		for _, opt := range []delayed.OfferOption{delayed.WithReplace(), delayed.WithDebounce(time.Hour), delayed.WithUniqueFor(time.Hour)} {
			if _, err := dq.Offer(ctx, "c", time.Hour, delayed.WithID("c"), opt); !errors.Is(err, delayed.ErrQueueFull) {
				t.Fatalf("new id with a duplicate mode at the bound: %v, want ErrQueueFull", err)
			}
		}
		if ok, _ := dq.Contains(ctx, "c"); ok {
			t.Fatal("a refused upsert stored its item")
		}
		// A received item leaves the count; its Nack brings it back even
		// though a new offer filled its place.
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "d"); err != nil {
			t.Fatalf("offer while one is leased: %v", err)
		}
		if err := d.Nack(ctx, time.Hour); err != nil {
			t.Fatalf("nack at the bound: %v", err)
		}
		if got := msCount(t, rdb, name); got != 3 {
			t.Fatalf("Redis holds %d items, want 3 (the bound of 2, and a nacked item)", got)
		}
		if _, err := q.Offer(ctx, "e"); !errors.Is(err, blocking.ErrQueueFull) {
			t.Fatalf("offer past the bound: %v", err)
		}
	})
}

func TestMaxSizeOption(t *testing.T) {
	rdb := redistest.Standalone(t)
	for _, n := range []int64{0, -1} {
		q := blocking.New[string](rdb, "ms", blocking.WithMaxSize(n))
		if _, err := q.Offer(context.Background(), "x"); !errors.Is(err, blocking.ErrInvalidQueue) {
			t.Errorf("WithMaxSize(%d): %v, want ErrInvalidQueue", n, err)
		}
	}
}

// A bounded batch with replica acknowledgement runs as one transaction and
// is confirmed by WAIT after it: on the replica when OfferBatch returns,
// whole or not at all.
func TestMaxSizeBatchWithReplicaAck(t *testing.T) {
	t.Parallel()
	master := redistest.StartServer(t)
	replica := redistest.StartReplica(t, master)
	rdb, rr := master.Client(t), replica.Client(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[int](rdb, name, blocking.WithMaxSize(1000), blocking.WithReplicaAck(1, 2*time.Second))
	defer q.Close()
	dq := delayed.New(q, delayed.WithoutTransfer())
	defer dq.Close()
	ids, err := dq.OfferBatch(ctx, make([]int, 900), time.Hour)
	if err != nil || len(ids) != 900 {
		t.Fatalf("batch of 900 under a bound of 1000: %d ids, %v", len(ids), err)
	}
	if n := rr.ZCard(ctx, redistest.KeysOf(name).Delayed).Val(); n != 900 {
		t.Fatalf("the replica holds %d items when OfferBatch returned, want 900", n)
	}
	ids, err = dq.OfferBatch(ctx, make([]int, 600), time.Hour)
	if !errors.Is(err, delayed.ErrQueueFull) || len(ids) != 0 {
		t.Fatalf("batch past the bound: %d ids, %v", len(ids), err)
	}
	if n := msCount(t, rdb, name); n != 900 {
		t.Fatalf("after a refused batch the master holds %d, want 900", n)
	}
}

// A partitioned queue bounds each partition at its share of the bound, so
// the whole never goes past it; the limits of Consume are refused there.
func TestFlowControlWithPartitions(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const bound, parts = 40, 4
		q := blocking.New[int](rdb, name, blocking.WithMaxSize(bound), blocking.WithPartitions(parts))
		defer q.Close()
		stored := 0
		for i := range 200 {
			_, err := q.Offer(ctx, i)
			switch {
			case err == nil:
				stored++
			case !errors.Is(err, blocking.ErrQueueFull):
				t.Fatal(err)
			}
		}
		n, err := q.Size(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(stored) || stored != bound {
			t.Fatalf("%d offers stored, Size %d; want %d: each of %d partitions full at %d", stored, n, bound, parts, bound/parts)
		}
		if bad := blocking.New[int](rdb, name, blocking.WithMaxSize(3), blocking.WithPartitions(parts)); !errors.Is(bad.Close(), nil) {
			t.Fatal("Close of an invalid queue failed")
		} else if _, err := bad.Offer(ctx, 1); !errors.Is(err, blocking.ErrInvalidQueue) {
			t.Fatalf("a bound below the partitions: %v, want ErrInvalidQueue", err)
		}
		h := func(context.Context, *blocking.Delivery[int]) error { return nil }
		for _, opt := range []blocking.ConsumeOption{blocking.WithRateLimit(10, time.Second), blocking.WithGlobalConcurrency(2)} {
			if err := q.Consume(ctx, h, opt); !errors.Is(err, blocking.ErrInvalidArgument) {
				t.Fatalf("Consume with a limit on partitions: %v, want ErrInvalidArgument", err)
			}
		}
	})
}

// Every partition of a queue with replica acknowledgement waits for its
// replicas: with none, every offer, in whichever partition, says so.
func TestReplicaAckEveryPartition(t *testing.T) {
	rdb := redistest.Standalone(t) // no replica
	ctx := context.Background()
	q := blocking.New[int](rdb, redistest.QueueName(t), blocking.WithPartitions(4), blocking.WithReplicaAck(1, 20*time.Millisecond))
	defer q.Close()
	for i := range 16 {
		if id, err := q.Offer(ctx, i); !errors.Is(err, blocking.ErrNotReplicated) || id == "" {
			t.Fatalf("offer %d: %q, %v; want its ID and ErrNotReplicated", i, id, err)
		}
	}
	if n, _ := q.Size(ctx); n != 16 {
		t.Fatalf("Size %d, want 16 (stored on the master)", n)
	}
}
