package blocking_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// TestPartitionsRecorded: the first process records n; a process with
// another n, or none, gets ErrInvalidQueue naming both numbers, from its
// first call; a bad n is refused before any call.
func TestPartitionsRecorded(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[int](rdb, name, blocking.WithPartitions(8))
		t.Cleanup(func() { _ = q.Close() })
		if _, err := q.Offer(ctx, 1); err != nil {
			t.Fatal(err)
		}
		got, err := rdb.HGet(ctx, redistest.KeysOf(name).Partition(0).Meta, keys.MetaPartitions).Result()
		if err != nil || got != "8" {
			t.Fatalf("recorded partitions = %q, %v; want 8", got, err)
		}
		for _, opts := range [][]blocking.Option{nil, {blocking.WithPartitions(4)}, {blocking.WithPartitions(1)}} {
			other := blocking.New[int](rdb, name, opts...)
			_, err := other.Size(ctx)
			if !errors.Is(err, blocking.ErrInvalidQueue) || !strings.Contains(err.Error(), "8") {
				t.Fatalf("Size with %d options = %v; want ErrInvalidQueue naming 8", len(opts), err)
			}
			// Known from then on without a round trip, on every call.
			if _, err := other.Offer(ctx, 1); !errors.Is(err, blocking.ErrInvalidQueue) {
				t.Fatalf("Offer after a mismatch = %v", err)
			}
			if _, _, err := other.Poll(ctx, 0); !errors.Is(err, blocking.ErrInvalidQueue) {
				t.Fatalf("Poll after a mismatch = %v", err)
			}
			_ = other.Close()
		}
		same := blocking.New[int](rdb, name, blocking.WithPartitions(8))
		defer func() { _ = same.Close() }()
		if n, err := same.Size(ctx); err != nil || n != 1 {
			t.Fatalf("Size with the same n = %d, %v", n, err)
		}
		for _, n := range []int{0, -1, 257} {
			bad := blocking.New[int](rdb, name, blocking.WithPartitions(n))
			if _, err := bad.Size(ctx); !errors.Is(err, blocking.ErrInvalidQueue) || !strings.Contains(err.Error(), "WithPartitions("+strconv.Itoa(n)+")") {
				t.Fatalf("WithPartitions(%d): %v", n, err)
			}
		}
	})
}

// TestPartitionsRefusedOnQueueUsedWithout: a queue used without
// partitions refuses a process that opens it with some, from its first
// call, naming both numbers: when the first process recorded its layout,
// when it left the queue empty, and when the queue holds items but no
// record (written before layouts were recorded).
func TestPartitionsRefusedOnQueueUsedWithout(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for _, tc := range []struct {
			name   string
			offers int
			forget bool // delete the record, as a queue written before it existed
		}{{"items", 8, false}, {"empty", 0, false}, {"items-no-record", 8, true}} {
			t.Run(tc.name, func(t *testing.T) {
				name := redistest.QueueName(t)
				plain := blocking.New[int](rdb, name)
				t.Cleanup(func() { _ = plain.Close() })
				if _, err := plain.Size(ctx); err != nil {
					t.Fatal(err)
				}
				for i := range tc.offers {
					if _, err := plain.Offer(ctx, i, blocking.WithID("id-"+strconv.Itoa(i))); err != nil {
						t.Fatal(err)
					}
				}
				if tc.forget {
					if err := rdb.HDel(ctx, redistest.KeysOf(name).Partition(0).Meta, keys.MetaPartitions).Err(); err != nil {
						t.Fatal(err)
					}
				}
				parted := blocking.New[int](rdb, name, blocking.WithPartitions(4))
				t.Cleanup(func() { _ = parted.Close() })
				_, err := parted.Offer(ctx, 99, blocking.WithID("new"))
				if !errors.Is(err, blocking.ErrInvalidQueue) || !strings.Contains(err.Error(), "has 1 partitions") ||
					!strings.Contains(err.Error(), "WithPartitions") || !strings.Contains(err.Error(), "with 4") {
					t.Fatalf("first Offer of a process WithPartitions(4) = %v; want ErrInvalidQueue naming 1 and 4", err)
				}
				if _, err := parted.Size(ctx); !errors.Is(err, blocking.ErrInvalidQueue) {
					t.Fatalf("Size after the refusal = %v", err)
				}
				// The queue is as the first process left it.
				if _, err := plain.Offer(ctx, 99, blocking.WithID("new")); err != nil {
					t.Fatalf("Offer of the plain process = %v", err)
				}
				if n, err := plain.Size(ctx); err != nil || n != int64(tc.offers+1) {
					t.Fatalf("Size = %d, %v; want %d", n, err, tc.offers+1)
				}
			})
		}
	})
}

// TestPartitionsRecordedAfterAnnounce: a new partitioned queue whose
// transfer announced it (writing its codec to the meta hash) before the
// process's first call records its own number of partitions: the meta hash
// alone is no sign of a queue used without partitions (before: delayed.New
// raced the first offer, and the offer failed, "has 1 partitions").
func TestPartitionsRecordedAfterAnnounce(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		if err := rdb.HSet(ctx, redistest.KeysOf(name).Partition(0).Meta, keys.MetaCodec, "msgpack").Err(); err != nil {
			t.Fatal(err)
		}
		q := blocking.New[int](rdb, name, blocking.WithPartitions(4))
		t.Cleanup(func() { _ = q.Close() })
		if _, err := q.Offer(ctx, 1); err != nil {
			t.Fatalf("first Offer after the announce: %v", err)
		}
		if got, err := rdb.HGet(ctx, redistest.KeysOf(name).Partition(0).Meta, keys.MetaPartitions).Result(); err != nil || got != "4" {
			t.Fatalf("recorded partitions = %q, %v; want 4", got, err)
		}
	})
}

// TestPartitionOneIsTodaysLayout: a queue of one partition records its
// count, 1, and writes no key of another partition.
func TestPartitionOneIsTodaysLayout(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[int](rdb, name, blocking.WithPartitions(1))
	t.Cleanup(func() { _ = q.Close() })
	if _, err := q.Offer(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Take(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := rdb.HGet(ctx, redistest.KeysOf(name).Partition(0).Meta, keys.MetaPartitions).Result(); err != nil || got != "1" {
		t.Fatalf("recorded partitions = %q, %v; want 1", got, err)
	}
	if ks, _ := rdb.Keys(ctx, "redelay:{"+name+"{*").Result(); len(ks) != 0 {
		t.Fatalf("keys of other partitions: %v", ks)
	}
}

// TestPartitionRoutingByID: an item goes to the partition of its ID, and
// the calls by ID find it there.
func TestPartitionRoutingByID(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithPartitions(4))
		t.Cleanup(func() { _ = q.Close() })
		for i := range 40 {
			id := "item-" + strconv.Itoa(i)
			if _, err := q.Offer(ctx, id, blocking.WithID(id)); err != nil {
				t.Fatal(err)
			}
			want := keys.PartitionOf(id, 4)
			n, err := rdb.LLen(ctx, redistest.KeysOf(name).Partition(want).Ready).Result()
			if err != nil || n == 0 {
				t.Fatalf("%s: partition %d holds %d items, %v", id, want, n, err)
			}
		}
		if n, err := q.Size(ctx); err != nil || n != 40 {
			t.Fatalf("Size = %d, %v", n, err)
		}
		for i := range 4 {
			if n, _ := rdb.LLen(ctx, redistest.KeysOf(name).Partition(i).Ready).Result(); n == 0 {
				t.Fatalf("partition %d is empty", i)
			}
		}
	})
}

// TestPartitionFairTake: items in every partition; Take gets them all, and
// every partition is served among the first takes (none starves).
func TestPartitionFairTake(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const n, per = 4, 25
		q := blocking.New[string](rdb, name, blocking.WithPartitions(n))
		t.Cleanup(func() { _ = q.Close() })
		total := 0
		for p := range n {
			for k := 0; k < per; total++ {
				id := "i" + strconv.Itoa(total)
				if keys.PartitionOf(id, n) != p {
					continue
				}
				k++
				if _, err := q.Offer(ctx, id, blocking.WithID(id)); err != nil {
					t.Fatal(err)
				}
			}
		}
		seen := map[int]int{}
		for i := range n * per {
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			seen[keys.PartitionOf(v, n)]++
			if i == 2*n-1 {
				for p := range n {
					if seen[p] == 0 {
						t.Fatalf("partition %d not served in the first %d takes: %v", p, 2*n, seen)
					}
				}
			}
		}
		for p := range n {
			if seen[p] != per {
				t.Fatalf("partition %d: %d taken, want %d", p, seen[p], per)
			}
		}
	})
}

// TestPartitionWakeAndStop: a blocked Take and a blocked Receive are woken
// by an item in any partition; ctx end and Close stop the waiters.
func TestPartitionWakeAndStop(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const n = 4
		q := blocking.New[string](rdb, name, blocking.WithPartitions(n), blocking.WithVisibilityTimeout(5*time.Second))
		for p := range n {
			id := redistest.IDIn(p, n)
			got := make(chan string, 1)
			errc := make(chan error, 1)
			go func() {
				v, err := q.Take(ctx)
				got <- v
				errc <- err
			}()
			time.Sleep(50 * time.Millisecond) // let it block
			if _, err := q.Offer(ctx, id, blocking.WithID(id)); err != nil {
				t.Fatal(err)
			}
			if v, err := <-got, <-errc; err != nil || v != id {
				t.Fatalf("Take woken by partition %d = %q, %v", p, v, err)
			}
			dc := make(chan *blocking.Delivery[string], 1)
			go func() {
				d, err := q.Receive(ctx)
				if err != nil {
					t.Error(err)
				}
				dc <- d
			}()
			time.Sleep(50 * time.Millisecond)
			if _, err := q.Offer(ctx, id+"r", blocking.WithID(id)); err != nil {
				t.Fatal(err)
			}
			d := <-dc
			if d == nil || d.ID != id || d.Value != id+"r" {
				t.Fatalf("Receive woken by partition %d = %+v", p, d)
			}
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// ctx end.
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		if _, err := q.Take(cctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Take after ctx end = %v", err)
		}
		cancel()
		if _, ok, err := q.Poll(ctx, 50*time.Millisecond); ok || err != nil {
			t.Fatalf("Poll on an empty queue = %v, %v", ok, err)
		}
		// Close while blocked.
		errc := make(chan error, 1)
		go func() {
			_, err := q.Receive(ctx)
			errc <- err
		}()
		time.Sleep(50 * time.Millisecond)
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; !errors.Is(err, blocking.ErrClosed) {
			t.Fatalf("Receive at Close = %v", err)
		}
		// Nothing was lost or left claimed.
		for p := range n {
			k := redistest.KeysOf(name).Partition(p)
			if c, _ := rdb.LLen(ctx, k.Claimed).Result(); c != 0 {
				t.Fatalf("partition %d: %d items left claimed", p, c)
			}
		}
	})
}

// TestPartitionConsume: Consume with concurrency handles every item of
// every partition once.
func TestPartitionConsume(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const n, items = 8, 400
		q := blocking.New[int](rdb, name, blocking.WithPartitions(n))
		t.Cleanup(func() { _ = q.Close() })
		for i := range items {
			if _, err := q.Offer(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		seen := map[int]int{}
		var done atomic.Int64
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			errc <- q.Consume(cctx, func(ctx context.Context, d *blocking.Delivery[int]) error {
				mu.Lock()
				seen[d.Value]++
				mu.Unlock()
				if done.Add(1) == items {
					cancel()
				}
				return nil
			}, blocking.WithConcurrency(8))
		}()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if len(seen) != items {
			t.Fatalf("%d distinct items handled, want %d", len(seen), items)
		}
		st, err := q.Stats(ctx)
		if err != nil || st.Ready != 0 || st.Inflight != 0 {
			t.Fatalf("Stats after = %+v, %v", st, err)
		}
	})
}

// TestPartitionDeadLetters: items dead-lettered in every partition are in
// the partitioned dead-letter queue, and Redrive brings each back to its
// partition.
func TestPartitionDeadLetters(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n = 4
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithPartitions(n), blocking.WithMaxAttempts(1))
		t.Cleanup(func() { _ = q.Close() })
		for p := range n {
			if _, err := q.Offer(ctx, redistest.IDIn(p, n), blocking.WithID(redistest.IDIn(p, n))); err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			d, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Nack(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		for p := range n {
			if c, _ := rdb.LLen(ctx, redistest.KeysOf(name).Partition(p).DeadReady).Result(); c != 1 {
				t.Fatalf("partition %d holds %d dead letters, want 1", p, c)
			}
		}
		if s, err := q.DeadLetters().Size(ctx); err != nil || s != n {
			t.Fatalf("DeadLetters().Size = %d, %v", s, err)
		}
		if err := q.RedriveID(ctx, redistest.IDIn(2, n)); err != nil {
			t.Fatal(err)
		}
		if moved, err := q.Redrive(ctx, 0); err != nil || moved != n-1 {
			t.Fatalf("Redrive = %d, %v; want %d", moved, err, n-1)
		}
		if s, err := q.Size(ctx); err != nil || s != n {
			t.Fatalf("Size after Redrive = %d, %v", s, err)
		}
		for p := range n {
			if c, _ := rdb.LLen(ctx, redistest.KeysOf(name).Partition(p).Ready).Result(); c != 1 {
				t.Fatalf("partition %d holds %d ready items after Redrive, want 1", p, c)
			}
		}
	})
}

// TestPartitionPause: Pause stops every partition (Poll times out, a
// blocked Receive waits), Resume lets the waiting calls go on.
func TestPartitionPause(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n = 4
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithPartitions(n))
		t.Cleanup(func() { _ = q.Close() })
		if _, ok, err := q.Poll(ctx, 0); ok || err != nil { // starts the background work
			t.Fatalf("Poll = %v, %v", ok, err)
		}
		if err := q.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		for p := range n {
			if v, _ := rdb.HGet(ctx, redistest.KeysOf(name).Partition(p).Meta, "paused").Result(); v == "" {
				t.Fatalf("partition %d not paused", p)
			}
		}
		for p := range n {
			if _, err := q.Offer(ctx, redistest.IDIn(p, n), blocking.WithID(redistest.IDIn(p, n))); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, err := q.Poll(ctx, 200*time.Millisecond); ok || err != nil {
			t.Fatalf("Poll on a paused queue = %v, %v", ok, err)
		}
		got := make(chan *blocking.Delivery[string], n)
		for range n {
			go func() {
				d, err := q.Receive(ctx)
				if err != nil {
					t.Error(err)
				}
				got <- d
			}()
		}
		time.Sleep(100 * time.Millisecond)
		select {
		case d := <-got:
			t.Fatalf("Receive on a paused queue = %+v", d)
		default:
		}
		if st, err := q.Stats(ctx); err != nil || !st.Paused || st.Ready != n {
			t.Fatalf("Stats while paused = %+v, %v", st, err)
		}
		if err := q.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for range n {
			d := <-got
			if d == nil {
				t.FailNow()
			}
			seen[d.ID] = true
			_ = d.Ack(ctx)
		}
		if len(seen) != n {
			t.Fatalf("after Resume: %v", seen)
		}
	})
}
