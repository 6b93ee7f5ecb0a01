package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/redistest"
)

type order struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
	Items  []string
}

func TestOfferTakeFIFO(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[int](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		for i := range 20 {
			if _, err := q.Offer(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := q.Size(ctx); err != nil || n != 20 {
			t.Fatalf("Size = %d, %v; want 20", n, err)
		}
		for i := range 20 {
			v, err := q.Take(ctx)
			if err != nil || v != i {
				t.Fatalf("Take #%d = %d, %v", i, v, err)
			}
		}
		if n, _ := q.Size(ctx); n != 0 {
			t.Fatalf("Size after draining = %d", n)
		}
	})
}

func TestPoll(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })

		start := time.Now()
		_, ok, err := q.Poll(ctx, 150*time.Millisecond)
		elapsed := time.Since(start)
		if err != nil || ok {
			t.Fatalf("Poll on empty queue = ok %v, err %v", ok, err)
		}
		if elapsed < 150*time.Millisecond || elapsed > 2*time.Second {
			t.Fatalf("Poll(150ms) took %v", elapsed)
		}

		go func() {
			time.Sleep(50 * time.Millisecond)
			_, _ = q.Offer(ctx, "late")
		}()
		v, ok, err := q.Poll(ctx, 5*time.Second)
		if err != nil || !ok || v != "late" {
			t.Fatalf("Poll = %q, %v, %v", v, ok, err)
		}
		// A zero timeout is a non-blocking take.
		if _, ok, err := q.Poll(ctx, 0); ok || err != nil {
			t.Fatalf("Poll(0) on an empty queue = %v, %v", ok, err)
		}
		if _, err := q.Offer(ctx, "ready"); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := q.Poll(ctx, 0); !ok || err != nil || v != "ready" {
			t.Fatalf("Poll(0) with an item ready = %q, %v, %v", v, ok, err)
		}
		if _, _, err := q.Poll(ctx, -time.Second); err == nil {
			t.Fatal("Poll with a negative timeout returned no error")
		}
	})
}

// A cancelled Take returns ctx's error promptly, leaves the client usable, and
// never swallows an item offered around the moment of cancellation.
func TestTakeCancelled(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		q := blocking.New[int](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })

		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { _, err := q.Take(ctx); errc <- err }()
		time.Sleep(100 * time.Millisecond)
		cancel()
		select {
		case err := <-errc:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Take after cancel = %v, want context.Canceled", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("Take did not return after its context was cancelled")
		}

		dctx, dcancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
		defer dcancel()
		if _, err := q.Take(dctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Take past deadline = %v, want DeadlineExceeded", err)
		}
		if _, err := q.Take(dctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Take with an ended context = %v", err)
		}

		// Race cancellations against offers: every item is taken exactly once,
		// either by the cancelled Take (which then returns it) or later.
		const rounds = 40
		got := make(map[int]int)
		for i := range rounds {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%8)*3*time.Millisecond)
			done := make(chan struct{})
			go func() {
				defer close(done)
				if v, err := q.Take(ctx); err == nil {
					got[v]++
				}
			}()
			time.Sleep(time.Duration(i%5) * 2 * time.Millisecond)
			if _, err := q.Offer(context.Background(), i); err != nil {
				t.Fatal(err)
			}
			<-done
			cancel()
		}
		for {
			v, ok, err := q.Poll(context.Background(), 200*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got[v]++
		}
		for i := range rounds {
			if got[i] != 1 {
				t.Errorf("item %d taken %d times", i, got[i])
			}
		}
	})
}

// With ContextTimeoutEnabled and a short ReadTimeout the queue keeps its
// server-side blocks below the read timeout, so no socket read times out.
func TestShortReadTimeoutClient(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		var c redis.UniversalClient
		switch x := rdb.(type) {
		case *redis.Client:
			o := *x.Options()
			o.ReadTimeout, o.ContextTimeoutEnabled = 90*time.Millisecond, true
			c = redis.NewClient(&o)
		case *redis.ClusterClient:
			o := *x.Options()
			o.ReadTimeout, o.ContextTimeoutEnabled = 90*time.Millisecond, true
			c = redis.NewClusterClient(&o)
		}
		t.Cleanup(func() { _ = c.Close() })
		q := blocking.New[int](c, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		_, ok, err := q.Poll(context.Background(), 400*time.Millisecond)
		if err != nil || ok {
			t.Fatalf("Poll = %v, %v; want a clean timeout", ok, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		if _, err := q.Take(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Take = %v", err)
		}
		if _, err := q.Offer(context.Background(), 7); err != nil {
			t.Fatal(err)
		}
		if v, err := q.Take(context.Background()); err != nil || v != 7 {
			t.Fatalf("Take = %v, %v", v, err)
		}
	})
}

func TestCodecs(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		want := order{ID: "o-1", Amount: 12.5, Items: []string{"tea", "milk"}}
		for _, c := range []codec.Codec{codec.Msgpack(), codec.JSON()} {
			q := blocking.New[order](rdb, redistest.QueueName(t), blocking.WithCodec(c))
			if _, err := q.Offer(ctx, want); err != nil {
				t.Fatalf("%s: %v", c.Name(), err)
			}
			got, err := q.Take(ctx)
			if err != nil || got.ID != want.ID || got.Amount != want.Amount || strings.Join(got.Items, ",") != "tea,milk" {
				t.Fatalf("%s: got %+v, %v", c.Name(), got, err)
			}
			_ = q.Close()
		}

		qb := blocking.New[[]byte](rdb, redistest.QueueName(t), blocking.WithCodec(codec.Raw()))
		defer qb.Close()
		bin := []byte{0, 1, 2, 0xff, 0xfe}
		if _, err := qb.Offer(ctx, bin); err != nil {
			t.Fatal(err)
		}
		if got, err := qb.Take(ctx); err != nil || string(got) != string(bin) {
			t.Fatalf("raw bytes: %v, %v", got, err)
		}
		qs := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithCodec(codec.Raw()))
		defer qs.Close()
		if _, err := qs.Offer(ctx, "héllo"); err != nil {
			t.Fatal(err)
		}
		if got, err := qs.Take(ctx); err != nil || got != "héllo" {
			t.Fatalf("raw string: %q, %v", got, err)
		}
		qi := blocking.New[int](rdb, redistest.QueueName(t), blocking.WithCodec(codec.Raw()))
		defer qi.Close()
		if _, err := qi.Offer(ctx, 1); !errors.Is(err, codec.ErrUnsupportedType) {
			t.Fatalf("raw codec with int = %v, want ErrUnsupportedType", err)
		}
	})
}

func TestInvalid(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	cases := map[string]*blocking.Queue[int]{
		"nil client":        blocking.New[int](nil, "q"),
		"typed nil client":  blocking.New[int]((*redis.Client)(nil), "q"),
		"typed nil cluster": blocking.New[int]((*redis.ClusterClient)(nil), "q"),
		"empty name":        blocking.New[int](rdb, ""),
		"brace in name":     blocking.New[int](rdb, "a{b}"),
		"space in name":     blocking.New[int](rdb, "a b"),
		"nil codec":         blocking.New[int](rdb, "q", blocking.WithCodec(nil)),
		"batch size 0":      blocking.New[int](rdb, "q", blocking.WithTransferBatchSize(0)),
		"sweep 0":           blocking.New[int](rdb, "q", blocking.WithSweepInterval(0)),
		"max payload -2":    blocking.New[int](rdb, "q", blocking.WithMaxPayloadSize(-2)),
		"batch size 10000":  blocking.New[int](rdb, "q", blocking.WithTransferBatchSize(10000)),
	}
	for name, q := range cases {
		_, err := q.Offer(ctx, 1)
		errs := []error{err}
		_, err = q.Take(ctx)
		errs = append(errs, err)
		_, _, err = q.Poll(ctx, time.Millisecond)
		errs = append(errs, err)
		_, err = q.Size(ctx)
		errs = append(errs, err)
		for i, err := range errs {
			if !errors.Is(err, blocking.ErrInvalidQueue) {
				t.Errorf("%s: call %d returned %v, want ErrInvalidQueue", name, i, err)
			}
		}
		if err := q.Close(); err != nil {
			t.Errorf("%s: Close = %v", name, err)
		}
	}
	if _, err := cases["empty name"].Offer(ctx, 1); !strings.Contains(err.Error(), "empty") {
		t.Errorf("error does not name the problem: %v", err)
	}

	big := blocking.New[string](rdb, "big", blocking.WithMaxPayloadSize(100))
	if _, err := big.Offer(ctx, strings.Repeat("x", 101)); !errors.Is(err, blocking.ErrPayloadTooLarge) {
		t.Fatalf("oversize Offer = %v, want ErrPayloadTooLarge", err)
	}
	if _, err := big.Offer(ctx, strings.Repeat("x", 90)); err != nil {
		t.Fatalf("Offer under the limit = %v", err)
	}
}

// Bytes that are no envelope are dead-lettered; an item of another type is
// put back as a failed attempt; Take moves on to the next one.
func TestPoisonTake(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		ready := fmt.Sprintf("redelay:{%s}:ready", name)
		dead := fmt.Sprintf("redelay:{%s}:dead:ready", name)

		strs := blocking.New[string](rdb, name)
		defer strs.Close()
		if err := rdb.LPush(ctx, ready, "not an envelope").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.LPush(ctx, ready, []byte{9, 0, 0}).Err(); err != nil { // unknown version
			t.Fatal(err)
		}
		if _, err := strs.Offer(ctx, "a string, not an order"); err != nil {
			t.Fatal(err)
		}
		orders := blocking.New[order](rdb, name)
		defer orders.Close()
		if _, err := orders.Offer(ctx, order{ID: "good"}); err != nil {
			t.Fatal(err)
		}

		got, err := orders.Take(ctx)
		if err != nil || got.ID != "good" {
			t.Fatalf("Take = %+v, %v; want the good order", got, err)
		}
		if n, err := rdb.LLen(ctx, dead).Result(); err != nil || n != 2 {
			t.Fatalf("dead letters = %d, %v; want 2", n, err)
		}
		if n, err := rdb.ZCard(ctx, redistest.KeysOf(name).Retry).Result(); err != nil || n != 1 {
			t.Fatalf("retries = %d, %v; want the string, put back", n, err)
		}
	})
}

func TestClose(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[int](rdb, redistest.QueueName(t))
		if _, err := q.Offer(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Take(ctx); err != nil { // starts the transfer
			t.Fatal(err)
		}
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		if err := q.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		if _, err := q.Take(ctx); !errors.Is(err, blocking.ErrClosed) {
			t.Fatalf("Take after Close = %v", err)
		}
		if _, err := q.Offer(ctx, 1); !errors.Is(err, blocking.ErrClosed) {
			t.Fatalf("Offer after Close = %v", err)
		}
	})
}

// Many goroutines take concurrently; each item reaches exactly one of them.
func TestConcurrentTakers(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[int](rdb, redistest.QueueName(t))
		defer q.Close()
		const n, takers = 600, 6
		var mu sync.Mutex
		seen := make(map[int]int)
		var wg sync.WaitGroup
		for range takers {
			wg.Go(func() {
				for {
					v, ok, err := q.Poll(ctx, 300*time.Millisecond)
					if err != nil {
						t.Error(err)
						return
					}
					if !ok {
						return
					}
					mu.Lock()
					seen[v]++
					mu.Unlock()
				}
			})
		}
		for i := range n {
			if _, err := q.Offer(ctx, i); err != nil {
				t.Fatal(err)
			}
		}
		wg.Wait()
		for i := range n {
			if seen[i] != 1 {
				t.Fatalf("item %d seen %d times", i, seen[i])
			}
		}
	})
}
