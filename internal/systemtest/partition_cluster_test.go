package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// TestPartitionClusterLoad: on a dedicated 3-master cluster, a queue of 8
// partitions has keys on every master; 20,000 items offered in batches
// and consumed by 3 processes (3 clients, 3 queues, each transferring and
// consuming) are each handled exactly once; and every master serves a
// fair share of the script calls (the spread is logged).
func TestPartitionClusterLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.StartCluster(t)
	admin := c.Client(t)
	const n, items, procs = 8, 20000, 3
	name := redistest.SpreadName(t, admin, n, 2)
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.ConfigResetStat(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}

	qs := make([]*blocking.Queue[int], procs)
	for i := range qs {
		qs[i] = blocking.New[int](c.Client(t), name, blocking.WithPartitions(n))
		t.Cleanup(func() { _ = qs[i].Close() })
	}
	dq := delayed.New(qs[0], delayed.WithoutTransfer())
	values := make([]int, items)
	for i := range values {
		values[i] = i
	}
	start := time.Now()
	for lo := 0; lo < items; lo += 5000 {
		if _, err := dq.OfferBatch(ctx, values[lo:lo+5000], 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	offered := time.Since(start)

	// Keys on every master.
	var mu sync.Mutex
	perMaster := map[string]int{}
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		ks, _, err := m.Scan(ctx, 0, "redelay:{"+name+"*", 1000).Result()
		mu.Lock()
		perMaster[m.Options().Addr] = len(ks)
		mu.Unlock()
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for addr, k := range perMaster {
		if k == 0 {
			t.Fatalf("master %s holds no key of the queue: %v", addr, perMaster)
		}
	}

	counts := make([]atomic.Int32, items)
	var handled atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Go(func() {
			err := q.Consume(cctx, func(ctx context.Context, d *blocking.Delivery[int]) error {
				counts[d.Value].Add(1)
				if handled.Add(1) == items {
					cancel()
				}
				return nil
			}, blocking.WithConcurrency(16))
			if !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	consumed := time.Since(start) - offered
	for i := range counts {
		if got := counts[i].Load(); got != 1 {
			t.Fatalf("item %d handled %d times", i, got)
		}
	}
	st, err := qs[0].Stats(ctx)
	if err != nil || st.Ready != 0 || st.Delayed != 0 || st.Inflight != 0 || st.Dead != 0 {
		t.Fatalf("Stats after the run = %+v, %v", st, err)
	}

	// The load on each master.
	calls := map[string]int64{}
	var total int64
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		st := redistest.ReadCommandStat(t, m, "evalsha")
		mu.Lock()
		calls[m.Options().Addr] = st.Calls
		total += st.Calls
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	parts := map[string]int{}
	for _, m := range redistest.MasterOf(t, admin, name, n) {
		parts[m]++
	}
	var spread string
	for addr, k := range calls {
		spread += fmt.Sprintf(" %s: %d partitions, %d script calls (%.0f%%);", addr, parts[addr], k, 100*float64(k)/float64(total))
		if float64(k) < 0.1*float64(total) {
			t.Errorf("master %s served %d of %d script calls", addr, k, total)
		}
	}
	t.Logf("%d items offered in %v, consumed by %d processes in %v; per master:%s",
		items, offered.Round(time.Millisecond), procs, consumed.Round(time.Millisecond), spread)
}

// TestPartitionRedelivery: an item received and never settled (its
// consumer killed) comes back after the visibility timeout, in every
// partition.
func TestPartitionRedelivery(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n = 4
		name := redistest.QueueName(t)
		crashed := blocking.New[string](rdb, name, blocking.WithPartitions(n), blocking.WithVisibilityTimeout(300*time.Millisecond))
		for p := range n {
			if _, err := crashed.Offer(ctx, redistest.IDIn(p, n), blocking.WithID(redistest.IDIn(p, n))); err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			if _, err := crashed.Receive(ctx); err != nil { // never settled
				t.Fatal(err)
			}
		}
		_ = crashed.Close() // as kill -9 would: the leases stay

		q := blocking.New[string](rdb, name, blocking.WithPartitions(n), blocking.WithVisibilityTimeout(5*time.Second))
		t.Cleanup(func() { _ = q.Close() })
		back := map[string]bool{}
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		for range n {
			d, err := q.Receive(rctx)
			if err != nil {
				t.Fatalf("redelivered %v so far: %v", back, err)
			}
			if d.Attempt != 2 || d.Value != d.ID {
				t.Fatalf("redelivery %+v", d)
			}
			back[d.ID] = true
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for p := range n {
			if !back[redistest.IDIn(p, n)] {
				t.Fatalf("partition %d's item not redelivered: %v", p, back)
			}
		}
	})
}

// TestPartitionPriority: within a partition, a higher priority goes first,
// whether taken by a non-blocking pop or handed by a waiter (a marker
// woke it).
func TestPartitionPriority(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n = 4
		q := blocking.New[int](rdb, redistest.QueueName(t), blocking.WithPartitions(n))
		t.Cleanup(func() { _ = q.Close() })
		ids := sameParts(2, n, 4)
		for prio, id := range ids {
			if _, err := q.Offer(ctx, prio, blocking.WithID(id), blocking.WithPriority(prio)); err != nil {
				t.Fatal(err)
			}
		}
		for want := len(ids) - 1; want >= 0; want-- {
			if v, err := q.Take(ctx); err != nil || v != want {
				t.Fatalf("Take = %d, %v; want priority %d", v, err, want)
			}
		}
		// A blocked receiver, woken by a prioritised item.
		got := make(chan *blocking.Delivery[int], 1)
		go func() {
			d, err := q.Receive(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- d
		}()
		time.Sleep(50 * time.Millisecond)
		if _, err := q.Offer(ctx, 7, blocking.WithID(ids[0]), blocking.WithPriority(7)); err != nil {
			t.Fatal(err)
		}
		d := <-got
		if d == nil || d.Value != 7 || d.Priority != 7 {
			t.Fatalf("Receive = %+v", d)
		}
		_ = d.Ack(ctx)
		if n, err := q.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size = %d, %v (a marker counted?)", n, err)
		}
	})
}

// sameParts returns k IDs that live in partition p of n.
func sameParts(p, n, k int) []string {
	var out []string
	for i := 0; len(out) < k; i++ {
		if id := fmt.Sprintf("s%d", i); keys.PartitionOf(id, n) == p {
			out = append(out, id)
		}
	}
	return out
}

// TestPartitionConsumeFair: with items ready in every partition, a
// Consume of concurrency 1 gets items of every partition among its first
// deliveries: none waits for the others to drain.
func TestPartitionConsumeFair(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n, per = 4, 30
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithPartitions(n))
		t.Cleanup(func() { _ = q.Close() })
		for p := range n {
			for _, id := range sameParts(p, n, per) {
				if _, err := q.Offer(ctx, id, blocking.WithID(id)); err != nil {
					t.Fatal(err)
				}
			}
		}
		var order []int
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		err := q.Consume(cctx, func(ctx context.Context, d *blocking.Delivery[string]) error {
			order = append(order, keys.PartitionOf(d.ID, n))
			if len(order) == n*per {
				cancel()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		// Consume leases up to two batches ahead (one item each at
		// concurrency 1): the first 4n deliveries cover every partition.
		seen := map[int]bool{}
		for _, p := range order[:4*n] {
			seen[p] = true
		}
		if len(seen) != n {
			t.Fatalf("first %d deliveries from partitions %v only: %v", 4*n, seen, order)
		}
	})
}
