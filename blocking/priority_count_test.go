package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// This file proves that the counts of a queue with priorities are exact:
// Stats.Ready, Size, Purge's result and the WithMaxSize bound agree with
// the items really ready, whatever mix of priorities and give-backs to the
// head of the line (an expired lease, Consume's release at shutdown, a
// Take or a wait whose caller left, a receive while paused) made the
// ready list, and after the priority set emptied with its marker left.

// prMarkers checks the ready list of queue name: at most one priority
// marker, at its tail.
func prMarkers(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	vals, err := rdb.LRange(context.Background(), redistest.KeysOf(name).Ready, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vals {
		if v == "\x00" && i != len(vals)-1 {
			t.Errorf("a priority marker at %d of the ready list's %d entries (0 is the head): only the tail may hold one", i, len(vals))
		}
	}
}

// prCounts checks that every count of q says n items are ready, and that
// the bound max (q's WithMaxSize) lets exactly max - n more be offered.
func prCounts(t *testing.T, rdb redis.UniversalClient, q *blocking.Queue[string], n, max int64) {
	t.Helper()
	ctx := context.Background()
	prMarkers(t, rdb, q.Name())
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ready != n || st.Inflight != 0 {
		t.Errorf("Stats: Ready %d, Inflight %d; want %d ready, none in flight", st.Ready, st.Inflight, n)
	}
	if size, err := q.Size(ctx); err != nil || size != n {
		t.Errorf("Size = %d, %v; want %d", size, err, n)
	}
	if items, err := q.Peek(ctx, blocking.MaxPage); err != nil || int64(len(items)) != n {
		t.Errorf("Peek = %d items, %v; want %d", len(items), err, n)
	}
	for i := n; i < max; i++ {
		if _, err := q.Offer(ctx, fmt.Sprint("fill-", i)); err != nil {
			t.Errorf("Offer of item %d of a queue bounded at %d: %v", i+1, max, err)
		}
	}
	if _, err := q.Offer(ctx, "one too many"); !errors.Is(err, blocking.ErrQueueFull) {
		t.Errorf("Offer of item %d of a queue bounded at %d = %v, want ErrQueueFull", max+1, max, err)
	}
	if got, err := q.Purge(ctx); err != nil || got != max {
		t.Errorf("Purge = %d, %v; want %d", got, err, max)
	}
	if st, err := q.Stats(ctx); err != nil || st.Ready != 0 {
		t.Errorf("Stats after Purge: Ready %d, %v", st.Ready, err)
	}
}

// A plain item's lease expires while an item of priority 5 is ready: two
// items are ready, and every count says so (before: 3, and a bound of 3
// refused the next offer).
func TestPriorityGiveBackCounts(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxSize(3),
			blocking.WithVisibilityTimeout(100*time.Millisecond), blocking.WithSweepInterval(50*time.Millisecond))
		t.Cleanup(func() { _ = q.Close() })
		if _, err := q.Offer(ctx, "plain"); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "urgent", blocking.WithPriority(5)); err != nil {
			t.Fatal(err)
		}
		redistest.WaitFor(t, 10*time.Second, "the expired lease reclaimed", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Inflight == 0
		})
		prCounts(t, rdb, q, 2, 3)
	})
}

// Purge returns how many items it dropped, not counting the priority
// marker: 3 items of priority 0 and 2 of priority 5 are 5 (before: 6).
func TestPriorityPurgeCountsItems(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		for _, p := range []int{0, 0, 0, 5, 5} {
			if _, err := q.Offer(ctx, fmt.Sprint("p", p), blocking.WithPriority(p)); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := q.Purge(ctx); err != nil || n != 5 {
			t.Fatalf("Purge = %d, %v; want 5", n, err)
		}
	})
}

// The priority set emptied while its marker stayed at the ready list's
// tail (the last item of priority deleted by the inspector): no count
// sees the marker.
func TestPriorityCountsWithStaleMarker(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxSize(4))
		t.Cleanup(func() { _ = q.Close() })
		for _, p := range []int{0, 0, 9} {
			if _, err := q.Offer(ctx, fmt.Sprint("p", p), blocking.WithPriority(p), blocking.WithID(fmt.Sprint("p", p, "-", time.Now().UnixNano()))); err != nil {
				t.Fatal(err)
			}
		}
		items, err := q.Peek(ctx, 1)
		if err != nil || len(items) != 1 || items[0].Priority != 9 {
			t.Fatalf("Peek = %+v, %v", items, err)
		}
		if err := inspect.New(rdb).Delete(ctx, name, items[0].ID); err != nil {
			t.Fatal(err)
		}
		prCounts(t, rdb, q, 2, 4)
	})
}

// Items of priority 0, 5 and 9, and plain items given back to the head of
// the line every way there is, while items of priority are ready: every
// count agrees with the items there are.
func TestPriorityCountsAfterGiveBacks(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		// The leases of a2 and a3 must outlive the steps before the
		// items of priority arrive; when a busy machine stalled longer,
		// the test starts again with a longer visibility timeout.
		for vis := time.Second; ; vis *= 2 {
			if prGiveBacks(t, rdb, vis) || vis >= 16*time.Second {
				return
			}
			t.Logf("a lease of %v expired before the items of priority came; again with %v", vis, 2*vis)
		}
	})
}

// prGiveBacks runs TestPriorityCountsAfterGiveBacks with the visibility
// timeout vis; false when the leases expired too soon.
func prGiveBacks(t *testing.T, rdb redis.UniversalClient, vis time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second+2*vis)
	defer cancel()
	name := redistest.QueueName(t)
	k := redistest.KeysOf(name)
	sq := store.New(rdb).Partition(k)
	const bound = 16
	q := blocking.New[string](rdb, name, blocking.WithMaxSize(bound),
		blocking.WithVisibilityTimeout(vis), blocking.WithSweepInterval(50*time.Millisecond))
	defer q.Close()
	offer := func(v string, p int) {
		t.Helper()
		if _, err := q.Offer(ctx, v, blocking.WithPriority(p)); err != nil {
			t.Fatal(err)
		}
	}
	lateTake := prLateTaker(t, rdb, name)
	want := int64(0)
	for i := range 8 {
		offer(fmt.Sprint("a", i), 0)
		want++
	}

	// While no item of priority is ready, plain items leave the ready
	// list: a0 and a1 leased by a Consume (one handler, one ahead)...
	cctx, stopConsume := context.WithCancel(ctx)
	consumed := make(chan error, 1)
	go func() {
		consumed <- q.Consume(cctx, func(hctx context.Context, d *blocking.Delivery[string]) error {
			<-hctx.Done()
			return hctx.Err()
		}, blocking.WithConcurrency(1), blocking.WithShutdownTimeout(0))
	}()
	redistest.WaitFor(t, 10*time.Second, "Consume leased two items", func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Inflight == 2
	})
	// ... a2 and a3 received ...
	leased := time.Now()
	ds, err := q.ReceiveBatch(ctx, 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("ReceiveBatch = %d, %v", len(ds), err)
	}
	// ... a4 popped by a Take, a5 and a6 claimed by blocking waits.
	a4, err := rdb.RPop(ctx, k.Ready).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var claimed [2][]byte
	for i := range claimed {
		if claimed[i], err = rdb.LMove(ctx, k.Ready, k.Claimed, "RIGHT", "LEFT").Bytes(); err != nil {
			t.Fatal(err)
		}
	}
	// On a standalone server, a7 is popped by a Take whose ctx ends
	// before the reply comes: it gives a7 back when the reply comes late.
	var late func()
	if lateTake != nil {
		late = lateTake()
	}

	// Items of priority arrive: the marker is at the ready list's tail.
	for i, p := range []int{5, 9, 5} {
		offer(fmt.Sprint("b", i, "-p", p), p)
		want++
	}
	if time.Since(leased) > vis*3/4 {
		stopConsume()
		<-consumed
		return false
	}

	// Every plain item goes back to the head of the line, past the marker.
	stopConsume()
	if err := <-consumed; !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume = %v", err)
	}
	if err := ds[1].Nack(ctx, 0); err != nil { // a3: ready again at once
		t.Fatal(err)
	}
	if err := sq.PushBack(ctx, a4); err != nil { // giveback.lua
		t.Fatal(err)
	}
	if back, err := sq.Unclaim(ctx, claimed[0]); err != nil || !back { // unclaim.lua
		t.Fatalf("Unclaim = %v, %v", back, err)
	}
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sq.Lease(ctx, vis, 1, "tok", claimed[1], store.Limits{}); !errors.Is(err, store.ErrPaused) { // receive.lua's give-back
		t.Fatalf("Lease of a claimed item while paused = %v, want ErrPaused", err)
	}
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	// A blocking wait claimed the marker, and its caller left.
	marker, err := rdb.LMove(ctx, k.Ready, k.Claimed, "RIGHT", "LEFT").Bytes()
	if err != nil || string(marker) != "\x00" {
		t.Fatalf("LMOVE of the ready list's tail = %q, %v; want the marker", marker, err)
	}
	if back, err := sq.Unclaim(ctx, marker); err != nil || !back {
		t.Fatalf("Unclaim of the marker = %v, %v", back, err)
	}
	if late != nil {
		late()
	}
	// a2's lease expires: the reclaimer gives it back.
	redistest.WaitFor(t, 10*time.Second+vis, "every item back", func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Inflight == 0 && st.Retry == 0
	})
	if ds[0].Ack(ctx) == nil {
		t.Fatal("a2's lease did not expire")
	}
	prCounts(t, rdb, q, want, bound)
	return true
}

// prLateTaker returns, on a standalone server, a function that makes a
// Take of queue name pop the ready list's tail and return with its ctx
// ended before the reply came, and returns a function that waits until
// the Take gave the item back; nil on a cluster (the proxy that slows the
// reply stands before one server).
func prLateTaker(t *testing.T, rdb redis.UniversalClient, name string) (take func() (wait func())) {
	t.Helper()
	direct, ok := rdb.(*redis.Client)
	if !ok {
		return nil
	}
	ctx := context.Background()
	p := redistest.StartProxy(t, direct.Options().Addr)
	cons := blocking.New[string](p.Client(t), name)
	t.Cleanup(func() { _ = cons.Close() })
	// A first Take on the empty queue starts the consumer's background
	// work and reads the pause flag, so that the Take below sends its pop
	// at once.
	if v, ok, err := cons.Poll(ctx, 0); err != nil || ok {
		t.Fatalf("Poll of the empty queue = %q, %v, %v", v, ok, err)
	}
	return func() func() {
		tail, err := direct.LIndex(ctx, redistest.KeysOf(name).Ready, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		p.DelayReplies(2 * time.Second)
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		v, err := cons.Take(tctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Take through the slow proxy = %q, %v; want its ctx's end", v, err)
		}
		return func() {
			p.DelayReplies(0)
			redistest.WaitFor(t, 10*time.Second, "the late Take gave its item back", func() bool {
				_, err := direct.LPos(ctx, redistest.KeysOf(name).Ready, tail, redis.LPosArgs{}).Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					t.Fatal(err)
				}
				return err == nil
			})
		}
	}
}
