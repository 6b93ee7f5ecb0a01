package delayed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// item records what the producer expected: its place and its earliest due time.
type item struct {
	Seq      int   `msgpack:"s"`
	NotEarly int64 `msgpack:"e"` // Unix µs before which the item must not arrive
}

func open[T any](t *testing.T, rdb redis.UniversalClient, name string, opts ...delayed.Option) (*blocking.Queue[T], *delayed.Queue[T]) {
	t.Helper()
	q := blocking.New[T](rdb, name)
	dq := delayed.New(q, opts...)
	t.Cleanup(func() {
		_ = dq.Close()
		_ = q.Close()
	})
	return q, dq
}

// Items arrive in due order, never before their due time.
func TestDueOrderNeverEarly(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[item](t, rdb, redistest.QueueName(t))
		const n = 60
		delays := make([]time.Duration, n)
		for i := range n {
			delays[i] = time.Duration(i) * 20 * time.Millisecond // 0 .. 1.18 s
		}
		// The server fixes each due time during the Offer call, on the
		// machine's clock: between the call's start and end, plus the delay.
		latest := make([]int64, n)
		for _, i := range rand.Perm(n) {
			notEarly := time.Now().Add(delays[i]).UnixMicro()
			if _, err := dq.Offer(ctx, item{Seq: i, NotEarly: notEarly}, delays[i]); err != nil {
				t.Fatal(err)
			}
			latest[i] = time.Now().Add(delays[i]).UnixMicro()
		}
		// Offering took a while: items whose delays differ by less than the
		// offering time may legitimately swap. Compare due times instead:
		// an item may not arrive after one that was surely due later.
		prev := int64(0) // the latest earliest-possible due time seen
		for range n {
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UnixMicro()
			if now < v.NotEarly {
				t.Fatalf("item %d arrived %d µs early", v.Seq, v.NotEarly-now)
			}
			if latest[v.Seq] < prev {
				t.Fatalf("item %d (due by %d) arrived after an item due at or after %d, %d µs later", v.Seq, latest[v.Seq], prev, prev-latest[v.Seq])
			}
			prev = max(prev, v.NotEarly)
		}
		if n, _ := dq.Size(ctx); n != 0 {
			t.Fatalf("pending after all arrived: %d", n)
		}
	})
}

// Items due at the same time become ready in offer order.
func TestTiesKeepOfferOrder(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[int](t, rdb, redistest.QueueName(t))
		// 300 ties: the seq prefix crosses a byte boundary (256).
		at := time.Now().Add(time.Second)
		for i := range 300 {
			if _, err := dq.OfferAt(ctx, i, at); err != nil {
				t.Fatal(err)
			}
		}
		values := make([]int, 100)
		for i := range values {
			values[i] = 300 + i
		}
		// Due after the ties even when offering them took longer than the
		// second they had (a loaded machine).
		if _, err := dq.OfferBatch(ctx, values, max(time.Until(at), 0)+50*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		for i := range 400 {
			v, err := q.Take(ctx)
			if err != nil || v != i {
				t.Fatalf("Take #%d = %d, %v", i, v, err)
			}
		}
	})
}

// Lateness on an idle machine is a few milliseconds; the bound here is only a
// sanity check (the sweep interval), the figures are logged.
func TestLateness(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[item](t, rdb, redistest.QueueName(t))
		const n = 200
		for i := range n {
			d := time.Duration(rand.IntN(2000)) * time.Millisecond
			if _, err := dq.Offer(ctx, item{Seq: i, NotEarly: time.Now().Add(d).UnixMicro()}, d); err != nil {
				t.Fatal(err)
			}
		}
		late := make([]time.Duration, 0, n)
		for range n {
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			late = append(late, time.Since(time.UnixMicro(v.NotEarly)))
		}
		slices.Sort(late)
		p50, p99, worst := late[n/2], late[n*99/100], late[n-1]
		t.Logf("lateness over %d items: p50 %v, p99 %v, max %v", n, p50, p99, worst)
		if worst > 2*time.Second {
			t.Fatalf("an item was %v late", worst)
		}
	})
}

func TestRemove(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[string](t, rdb, redistest.QueueName(t))
		for i := range 5 {
			if _, err := dq.Offer(ctx, fmt.Sprint("keep-", i), 300*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		id, err := dq.Offer(ctx, "cancelled", 200*time.Millisecond, delayed.WithID("order-7"))
		if err != nil || id != "order-7" {
			t.Fatalf("Offer WithID = %q, %v", id, err)
		}
		if n, _ := dq.Size(ctx); n != 6 {
			t.Fatalf("Size = %d, want 6", n)
		}
		if ok, err := dq.Remove(ctx, "order-7"); !ok || err != nil {
			t.Fatalf("Remove = %v, %v", ok, err)
		}
		if ok, err := dq.Remove(ctx, "order-7"); ok || err != nil {
			t.Fatalf("second Remove = %v, %v", ok, err)
		}
		if ok, err := dq.Remove(ctx, "never-offered"); ok || err != nil {
			t.Fatalf("Remove unknown = %v, %v", ok, err)
		}
		if _, err := dq.Remove(ctx, ""); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Fatalf("Remove empty id = %v", err)
		}
		if n, _ := dq.Size(ctx); n != 5 {
			t.Fatalf("Size after Remove = %d, want 5", n)
		}
		for range 5 {
			v, err := q.Take(ctx)
			if err != nil || v == "cancelled" {
				t.Fatalf("Take = %q, %v", v, err)
			}
		}
		if v, ok, _ := q.Poll(ctx, 300*time.Millisecond); ok {
			t.Fatalf("a removed item was delivered: %q", v)
		}
		// Once moved, an item is no longer pending and cannot be removed.
		if _, err := dq.Offer(ctx, "moved", 0, delayed.WithID("order-8")); err != nil {
			t.Fatal(err)
		}
		if ok, _ := dq.Remove(ctx, "order-8"); ok {
			t.Fatal("Remove of a ready item reported true")
		}
	})
}

func TestDuplicateID(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		// The second offer must reach Redis while the first is pending:
		// the transfer frees the ID once it moves the first. When it is
		// accepted after the first's lead has passed (a loaded machine
		// stalled between the offers), start again on a new queue with a
		// longer lead; within the lead, accepting it is the library's fault.
		var (
			q  *blocking.Queue[string]
			dq *delayed.Queue[string]
		)
		for lead := 200 * time.Millisecond; ; lead *= 2 {
			q, dq = open[string](t, rdb, redistest.QueueName(t))
			start := time.Now()
			if _, err := dq.Offer(ctx, "first", lead, delayed.WithID("order-42")); err != nil {
				t.Fatal(err)
			}
			_, err := dq.Offer(ctx, "second", lead/2, delayed.WithID("order-42"))
			if errors.Is(err, delayed.ErrDuplicate) {
				break
			}
			if elapsed := time.Since(start); elapsed < lead || lead >= 5*time.Second {
				t.Fatalf("duplicate Offer %v after the first, due %v after it = %v, want ErrDuplicate", elapsed, lead, err)
			}
		}
		if v, err := q.Take(ctx); err != nil || v != "first" {
			t.Fatalf("Take = %q, %v; want the first", v, err)
		}
		if v, ok, _ := q.Poll(ctx, 200*time.Millisecond); ok {
			t.Fatalf("duplicate delivered: %q", v)
		}
		// Moved on: the ID is free again.
		if _, err := dq.Offer(ctx, "again", 0, delayed.WithID("order-42")); err != nil {
			t.Fatalf("re-offer after delivery = %v", err)
		}
		if v, err := q.Take(ctx); err != nil || v != "again" {
			t.Fatalf("Take = %q, %v", v, err)
		}
	})
}

func TestInvalidArguments(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	_, dq := open[int](t, rdb, "args")
	if _, err := dq.Offer(ctx, 1, -time.Second); !errors.Is(err, delayed.ErrInvalidArgument) {
		t.Errorf("negative delay = %v", err)
	}
	if _, err := dq.Offer(ctx, 1, time.Second, delayed.WithID("")); !errors.Is(err, delayed.ErrInvalidArgument) {
		t.Errorf("empty id = %v", err)
	}
	if _, err := dq.Offer(ctx, 1, time.Second, delayed.WithID(string(make([]byte, 300)))); !errors.Is(err, delayed.ErrInvalidArgument) {
		t.Errorf("long id = %v", err)
	}
	if _, err := dq.OfferAt(ctx, 1, time.Time{}); !errors.Is(err, delayed.ErrInvalidArgument) {
		t.Errorf("zero time = %v", err)
	}
	if _, err := dq.OfferBatch(ctx, []int{1}, -1); !errors.Is(err, delayed.ErrInvalidArgument) {
		t.Errorf("negative batch delay = %v", err)
	}
	for name, d := range map[string]*delayed.Queue[int]{
		"nil queue":   delayed.New[int](nil),
		"nil client":  delayed.New(blocking.New[int](nil, "x")),
		"bad name":    delayed.New(blocking.New[int](rdb, "")),
		"bad options": delayed.New(blocking.New[int](rdb, "x", blocking.WithTransferBatchSize(-1))),
	} {
		_, err1 := d.Offer(ctx, 1, 0)
		_, err2 := d.Remove(ctx, "x")
		_, err3 := d.Size(ctx)
		for i, err := range []error{err1, err2, err3, d.Clear(ctx)} {
			if !errors.Is(err, delayed.ErrInvalidQueue) {
				t.Errorf("%s: call %d = %v, want ErrInvalidQueue", name, i, err)
			}
		}
		if err := d.Close(); err != nil {
			t.Errorf("%s: Close = %v", name, err)
		}
	}
}

func TestClearAndClose(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[int](t, rdb, redistest.QueueName(t))
		for i := range 10 {
			if _, err := dq.Offer(ctx, i, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Offer(ctx, 99); err != nil {
			t.Fatal(err)
		}
		if err := dq.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if n, _ := dq.Size(ctx); n != 0 {
			t.Fatalf("Size after Clear = %d", n)
		}
		if n, _ := q.Size(ctx); n != 1 {
			t.Fatalf("Clear touched the ready list: %d items", n)
		}
		if err := dq.Close(); err != nil {
			t.Fatal(err)
		}
		if err := dq.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		if _, err := dq.Offer(ctx, 1, 0); !errors.Is(err, delayed.ErrClosed) {
			t.Fatalf("Offer after Close = %v", err)
		}
		// The blocking queue is still open.
		if v, err := q.Take(ctx); err != nil || v != 99 {
			t.Fatalf("Take = %v, %v", v, err)
		}
	})
}

// Three clients (as three processes would) each transfer and consume the same
// queue: every item is delivered exactly once.
func TestManyTransferrersExactlyOnce(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const clients, consumersPer, perProducer = 3, 3, 400
		const total = clients * perProducer
		var received atomic.Int64
		counts := make([]atomic.Int32, total)
		var wg sync.WaitGroup
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		dqs := make([]*delayed.Queue[int], clients)
		for c := range clients {
			q, dq := open[int](t, redistest.NewClientLike(t, rdb), name)
			dqs[c] = dq
			for range consumersPer {
				wg.Go(func() {
					for {
						v, err := q.Take(cctx)
						if err != nil {
							return
						}
						counts[v].Add(1)
						if received.Add(1) == total {
							stop()
						}
					}
				})
			}
		}
		for c, dq := range dqs {
			wg.Go(func() {
				for i := range perProducer {
					d := time.Duration(rand.IntN(500)) * time.Millisecond
					if _, err := dq.Offer(ctx, c*perProducer+i, d); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			stop()
			<-done
			t.Fatalf("only %d of %d items arrived", received.Load(), total)
		}
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Errorf("item %d delivered %d times", i, c)
			}
		}
	})
}

// Items offered while no process transfers stay pending, and move as soon as
// a consumer opens the queue.
func TestOfferedWhileNoTransferRuns(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		_, producer := open[int](t, rdb, name, delayed.WithoutTransfer())
		for i := range 50 {
			if _, err := producer.Offer(ctx, i, 100*time.Millisecond); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(400 * time.Millisecond) // all due, nobody transferring
		if n, _ := producer.Size(ctx); n != 50 {
			t.Fatalf("pending = %d, want 50 (something transferred)", n)
		}
		consumer := blocking.New[int](redistest.NewClientLike(t, rdb), name)
		defer consumer.Close()
		for i := range 50 {
			v, err := consumer.Take(ctx)
			if err != nil || v != i {
				t.Fatalf("Take #%d = %d, %v", i, v, err)
			}
		}
	})
}

// A spike of 100k items due at once drains completely, exactly once, in
// bounded batches: Redis keeps answering other clients meanwhile.
func TestSpike100k(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const n = 100_000
		_, producer := open[int](t, rdb, name, delayed.WithoutTransfer())
		values := make([]int, n)
		for i := range values {
			values[i] = i
		}
		start := time.Now()
		if _, err := producer.OfferBatch(ctx, values, time.Millisecond); err != nil {
			t.Fatal(err)
		}
		t.Logf("offered %d in %v", n, time.Since(start))
		if p, _ := producer.Size(ctx); p != n {
			t.Fatalf("pending = %d, want %d", p, n)
		}

		// Watch Redis's responsiveness while the backlog moves.
		probe := redistest.NewClientLike(t, rdb)
		var worstPing atomic.Int64
		pctx, stopProbe := context.WithCancel(ctx)
		var probeWG sync.WaitGroup
		probeWG.Go(func() {
			for pctx.Err() == nil {
				t0 := time.Now()
				if err := probe.Do(pctx, "PING", name).Err(); err == nil {
					worstPing.Store(max(worstPing.Load(), int64(time.Since(t0))))
				}
				time.Sleep(2 * time.Millisecond)
			}
		})

		consumer := blocking.New[int](redistest.NewClientLike(t, rdb), name)
		defer consumer.Close()
		seen := make([]atomic.Bool, n)
		var dup atomic.Int64
		var got atomic.Int64
		start = time.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for got.Load() < n {
					v, ok, err := consumer.Poll(ctx, 2*time.Second)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						return
					}
					if seen[v].Swap(true) {
						dup.Add(1)
					}
					got.Add(1)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		stopProbe()
		probeWG.Wait()
		t.Logf("drained %d in %v (%.0f items/s through Take); slowest PING meanwhile %v",
			got.Load(), elapsed, float64(got.Load())/elapsed.Seconds(), time.Duration(worstPing.Load()))
		if got.Load() != n || dup.Load() != 0 {
			t.Fatalf("delivered %d of %d, %d duplicates", got.Load(), n, dup.Load())
		}
		if p, _ := producer.Size(ctx); p != 0 {
			t.Fatalf("pending after drain = %d", p)
		}
		if w := time.Duration(worstPing.Load()); w > time.Second {
			t.Fatalf("Redis stalled for %v during the drain", w)
		}
	})
}

// OfferBatch sends pipelined EVALSHA without loading the script first; a
// server that lost its scripts answers NOSCRIPT, and the batch loads the
// script and sends those offers again, in order.
func TestOfferBatchAfterScriptFlush(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[int](t, rdb, redistest.QueueName(t))
		flush := func(ctx context.Context, c *redis.Client) error { return c.ScriptFlush(ctx).Err() }
		var err error
		switch x := rdb.(type) {
		case *redis.Client:
			err = flush(ctx, x)
		case *redis.ClusterClient:
			err = x.ForEachShard(ctx, flush)
		}
		if err != nil {
			t.Fatal(err)
		}
		values := make([]int, 700) // two pipelined chunks
		for i := range values {
			values[i] = i
		}
		ids, err := dq.OfferBatch(ctx, values, 50*time.Millisecond)
		if err != nil || len(ids) != len(values) {
			t.Fatalf("OfferBatch = %d ids, %v", len(ids), err)
		}
		for i := range values {
			v, err := q.Take(ctx)
			if err != nil || v != i {
				t.Fatalf("Take #%d = %d, %v", i, v, err)
			}
		}
	})
}

// OfferBatch goes in chunks of 500 items, eight chunks per round trip: a
// batch spanning both bounds keeps slice order, returns distinct IDs that
// Remove knows, and takes the ready-list shortcut only when nothing pending
// is due before it (the rule single offers follow).
func TestOfferBatchChunks(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n = 4700 // nine chunks, two round trips
		values := make([]int, n)
		for i := range values {
			values[i] = i
		}

		// Nothing pending: due now, straight to the ready list, in order.
		q, dq := open[int](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
		ids, err := dq.OfferBatch(ctx, values, 0)
		if err != nil || len(ids) != n {
			t.Fatalf("OfferBatch = %d ids, %v", len(ids), err)
		}
		if got := len(slices.Compact(slices.Sorted(slices.Values(ids)))); got != n {
			t.Fatalf("%d distinct IDs of %d", got, n)
		}
		if pending, _ := dq.Size(ctx); pending != 0 {
			t.Fatalf("%d pending after a due batch with nothing pending", pending)
		}
		if ready, _ := q.Size(ctx); ready != n {
			t.Fatalf("ready = %d, want %d", ready, n)
		}
		for i := range n {
			if v, ok, err := q.Poll(ctx, 0); err != nil || !ok || v != i {
				t.Fatalf("Poll #%d = %d, %v, %v", i, v, ok, err)
			}
		}

		// An item pending and due first: the batch queues behind it. -1 must
		// be pending when it falls due; an offer that reaches Redis after
		// its due time makes it ready at once (nothing pending is due before
		// it), which a loaded machine can do to a short lead: then start
		// again on a new queue with a longer one.
		var (
			q2    *blocking.Queue[int]
			dq2   *delayed.Queue[int]
			first time.Time
		)
		for lead := 20 * time.Millisecond; ; lead *= 2 {
			q2, dq2 = open[int](t, rdb, redistest.QueueName(t)+"-behind", delayed.WithoutTransfer())
			first = time.Now().Add(lead)
			if _, err := dq2.OfferAt(ctx, -1, first); err != nil {
				t.Fatal(err)
			}
			ready, err := q2.Size(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if ready == 0 {
				break
			}
			if lead >= 5*time.Second {
				t.Fatalf("-1 was ready at once with a lead of %v", lead)
			}
		}
		time.Sleep(time.Until(first) + 40*time.Millisecond) // due, but nobody transfers yet
		ids, err = dq2.OfferBatch(ctx, values, 0)
		if err != nil || len(ids) != n {
			t.Fatalf("OfferBatch = %d ids, %v", len(ids), err)
		}
		if pending, _ := dq2.Size(ctx); pending != n+1 {
			t.Fatalf("%d pending, want %d", pending, n+1)
		}
		// Cancel one from each round trip.
		for _, i := range []int{7, 4321} {
			if ok, err := dq2.Remove(ctx, ids[i]); !ok || err != nil {
				t.Fatalf("Remove(ids[%d]) = %v, %v", i, ok, err)
			}
		}
		want := []int{-1}
		for i := range n {
			if i != 7 && i != 4321 {
				want = append(want, i)
			}
		}
		for k, w := range want {
			if v, err := q2.Take(ctx); err != nil || v != w {
				t.Fatalf("Take #%d = %d, %v; want %d", k, v, err, w)
			}
		}
		if v, ok, err := q2.Poll(ctx, 50*time.Millisecond); ok || err != nil {
			t.Fatalf("after the batch: Poll = %d, %v, %v", v, ok, err)
		}
	})
}

// A value that fails to encode stops the batch before its round trip: the
// IDs returned are exactly the items offered.
func TestOfferBatchEncodeError(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxPayloadSize(100))
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		values := make([]string, 4500)
		for i := range values {
			values[i] = fmt.Sprint(i)
		}
		values[4200] = string(make([]byte, 200)) // in the second round trip
		ids, err := dq.OfferBatch(ctx, values, time.Hour)
		if !errors.Is(err, blocking.ErrPayloadTooLarge) {
			t.Fatalf("OfferBatch error = %v, want ErrPayloadTooLarge", err)
		}
		if len(ids) != 4000 {
			t.Fatalf("%d IDs returned, want the first round trip's 4000", len(ids))
		}
		if pending, _ := dq.Size(ctx); pending != int64(len(ids)) {
			t.Fatalf("%d pending, %d IDs returned", pending, len(ids))
		}
	})
}

// Concurrent offers are sent together (see combine.go); each still gets
// its own outcome. Shared IDs are accepted once and refused as duplicates
// otherwise, every accepted item is delivered once, and each producer's
// items, all due at the same instant, keep that producer's offer order.
func TestConcurrentOffersCombine(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		// No transfer while the producers run: on a loaded machine they may
		// take longer than the 3 s until the items fall due, and a shared ID
		// whose item has moved on may be offered again. Take starts one.
		q, dq := open[item](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
		const producers, each, shared = 8, 400, 50
		at := time.Now().Add(3 * time.Second)
		var accepted [shared]atomic.Int32
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				for i := range each {
					v := item{Seq: p*each + i}
					if _, err := dq.OfferAt(ctx, v, at); err != nil {
						t.Errorf("producer %d offer %d: %v", p, i, err)
						return
					}
					if i%8 == 0 { // a shared ID now and then
						k := (i / 8) % shared
						_, err := dq.OfferAt(ctx, item{Seq: -1 - k}, at, delayed.WithID(fmt.Sprint("shared-", k)))
						switch {
						case err == nil:
							accepted[k].Add(1)
						case !errors.Is(err, delayed.ErrDuplicate):
							t.Errorf("shared %d: %v", k, err)
							return
						}
					}
				}
			})
		}
		wg.Wait()
		for k := range accepted {
			if n := accepted[k].Load(); n != 1 {
				t.Fatalf("shared-%d accepted %d times", k, n)
			}
		}
		want := producers*each + shared
		if n, err := dq.Size(ctx); err != nil || n != int64(want) {
			t.Fatalf("Size = %d, %v; want %d", n, err, want)
		}
		last := make([]int, producers)
		for p := range last {
			last[p] = -1
		}
		seen := map[int]bool{}
		for range want {
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if seen[v.Seq] {
				t.Fatalf("item %d delivered twice", v.Seq)
			}
			seen[v.Seq] = true
			if v.Seq < 0 {
				continue
			}
			p, i := v.Seq/each, v.Seq%each
			if i <= last[p] {
				t.Fatalf("producer %d: item %d after item %d", p, i, last[p])
			}
			last[p] = i
		}
	})
}

// An offer whose ctx ends while it waits for a combined call is withdrawn;
// one already sent may or may not land. The result says which: a nil error
// means the item is in Redis, a context error without an ID means it is
// not, and a context error with the ID means it was on its way.
func TestOfferCancelledWhileQueued(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		q, dq := open[int](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
		const producers, each = 8, 300
		type outcome struct {
			id, returned string
			err          error
		}
		outcomes := make([][]outcome, producers)
		var wg sync.WaitGroup
		for p := range producers {
			wg.Go(func() {
				for i := range each {
					id := fmt.Sprintf("p%d-%d", p, i)
					ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(300))*time.Microsecond)
					got, err := dq.Offer(ctx, i, time.Hour, delayed.WithID(id))
					cancel()
					if err != nil && !errors.Is(err, context.DeadlineExceeded) {
						t.Errorf("Offer %s: %v", id, err)
					}
					outcomes[p] = append(outcomes[p], outcome{id, got, err})
				}
			})
		}
		wg.Wait()
		_ = q.Close() // waits for the calls still on their way
		ctx := context.Background()
		items := redistest.KeysOf(q.Name()).Items
		var offered, withdrawn, unknown, landed int
		for _, os := range outcomes {
			for _, o := range os {
				in, err := rdb.HExists(ctx, items, o.id).Result()
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case o.err == nil:
					if !in || o.returned != o.id {
						t.Fatalf("%s: Offer returned %q, nil; pending in Redis: %v", o.id, o.returned, in)
					}
					offered++
				case o.returned == "":
					if in {
						t.Fatalf("%s: Offer returned %v with no ID (withdrawn), yet it is pending", o.id, o.err)
					}
					withdrawn++
				default:
					if o.returned != o.id {
						t.Fatalf("%s: Offer returned ID %q with %v", o.id, o.returned, o.err)
					}
					unknown++
					if in {
						landed++
					}
				}
			}
		}
		t.Logf("%d offered, %d withdrawn before sending, %d on their way when ctx ended (%d landed)", offered, withdrawn, unknown, landed)
		if n, _ := rdb.ZCard(ctx, redistest.KeysOf(q.Name()).Delayed).Result(); n != int64(offered+landed) {
			t.Fatalf("%d pending, %d offers succeeded and %d landed late", n, offered, landed)
		}
	})
}

// Combined offers across a Redis crash: producers keep offering while the
// server is SIGKILLed and, 2 s later, restarted (AOF, fsync always). Offers
// fail during the outage (each has a 1 s deadline), no producer hangs on a
// combined call that failed, every offer that returned an ID is pending
// after the restart, and offering works again afterwards.
func TestOffersAcrossRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, redistest.WithAOF())
	rdb := srv.Client(t)
	q, dq := open[int](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
	const producers = 8
	stop := make(chan struct{})
	var failed, okAfter atomic.Int64
	var restarted atomic.Bool
	ids := make([][]string, producers)
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("p%d-%d", p, i)
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				after := restarted.Load()
				_, err := dq.Offer(ctx, i, time.Hour, delayed.WithID(id))
				cancel()
				switch {
				case err == nil:
					ids[p] = append(ids[p], id)
					if after {
						okAfter.Add(1)
					}
				default:
					failed.Add(1)
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // longer than an offer's deadline: offers fail
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for okAfter.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("producers did not return: a combined offer is stuck")
	}
	if failed.Load() == 0 {
		t.Fatal("no offer failed while Redis was down: the crash was not exercised")
	}
	if okAfter.Load() < 100 {
		t.Fatalf("%d offers succeeded after the restart", okAfter.Load())
	}
	ctx := context.Background()
	items := redistest.KeysOf(q.Name()).Items
	total := 0
	for _, list := range ids {
		for _, id := range list {
			if in, err := rdb.HExists(ctx, items, id).Result(); err != nil || !in {
				t.Fatalf("%s: offered, but pending = %v, %v", id, in, err)
			}
			total++
		}
	}
	t.Logf("%d offers succeeded, %d failed during the outage, %d after the restart", total, failed.Load(), okAfter.Load())
}
