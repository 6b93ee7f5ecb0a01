package blocking_test

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
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// Every item is handled; failures and panics are retried with Attempt+1.
func TestConsumeRetriesErrorsAndPanics(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		q := blocking.New[int](rdb, redistest.QueueName(t))
		defer q.Close()
		const n = 200
		for i := range n {
			if _, err := q.Offer(context.Background(), i); err != nil {
				t.Fatal(err)
			}
		}
		var mu sync.Mutex
		attempts := map[int][]int{}
		var done atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		handler := func(_ context.Context, d *blocking.Delivery[int]) error {
			mu.Lock()
			attempts[d.Value] = append(attempts[d.Value], d.Attempt)
			mu.Unlock()
			if d.Attempt == 1 && d.Value%5 == 0 {
				return fmt.Errorf("item %d failed", d.Value)
			}
			if d.Attempt == 1 && d.Value%7 == 0 {
				panic("boom")
			}
			if d.Attempt == 2 && d.Value%5 == 0 && d.Headers[blocking.HeaderError] != fmt.Sprintf("item %d failed", d.Value) {
				t.Errorf("item %d retried without the error: %v", d.Value, d.Headers)
			}
			if done.Add(1) == n {
				cancel()
			}
			return nil
		}
		err := q.Consume(ctx, handler, blocking.WithConcurrency(8), blocking.WithBackoff(seedtest.FastBackoff))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Consume = %v", err)
		}
		for i := range n {
			want := 1
			if i%5 == 0 || i%7 == 0 {
				want = 2
			}
			if got := attempts[i]; len(got) != want || got[len(got)-1] != want {
				t.Errorf("item %d: attempts %v, want %d", i, got, want)
			}
		}
		if n, _ := q.DeadLetters().Size(context.Background()); n != 0 {
			t.Fatalf("dead letters = %d", n)
		}
	})
}

// A handler that always fails dead-letters its item after MaxAttempts.
func TestConsumeDeadLettersAfterMaxAttempts(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxAttempts(3))
		defer q.Close()
		if _, err := q.Offer(context.Background(), "always fails"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		var wg sync.WaitGroup
		wg.Go(func() {
			_ = q.Consume(ctx, func(context.Context, *blocking.Delivery[string]) error {
				calls.Add(1)
				return errors.New("upstream 503")
			}, blocking.WithBackoff(seedtest.FastBackoff))
		})
		dd := seedtest.ReceiveWithin(t, q.DeadLetters(), 10*time.Second)
		cancel()
		wg.Wait()
		if calls.Load() != 3 {
			t.Fatalf("handler called %d times, want 3", calls.Load())
		}
		if want := "upstream 503 (attempt 3 of 3)"; dd.Headers[blocking.HeaderError] != want {
			t.Fatalf("dead letter error = %q, want %q", dd.Headers[blocking.HeaderError], want)
		}
	})
}

// When ctx ends, Consume stops receiving, waits for running handlers, settles
// them, and returns; no item is lost or handled twice.
func TestConsumeShutdownWaitsForHandlers(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		q := blocking.New[int](rdb, name)
		defer q.Close()
		const n = 10
		for i := range n {
			if _, err := q.Offer(context.Background(), i); err != nil {
				t.Fatal(err)
			}
		}
		started := make(chan int, n)
		release := make(chan struct{})
		var finished atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan error, 1)
		go func() {
			returned <- q.Consume(ctx, func(hctx context.Context, d *blocking.Delivery[int]) error {
				started <- d.Value
				<-release
				if hctx.Err() != nil {
					t.Error("handler context cancelled during shutdown")
				}
				finished.Add(1)
				return nil
			}, blocking.WithConcurrency(4))
		}()
		for range 4 {
			<-started
		}
		cancel()
		select {
		case err := <-returned:
			t.Fatalf("Consume returned %v with handlers still running", err)
		case <-time.After(300 * time.Millisecond):
		}
		close(release)
		if err := <-returned; !errors.Is(err, context.Canceled) {
			t.Fatalf("Consume = %v", err)
		}
		if finished.Load() != 4 {
			t.Fatalf("%d handlers finished, want 4", finished.Load())
		}
		if l := keyLen(t, rdb, name, "leases"); l != 0 {
			t.Fatalf("%d leases left after shutdown", l)
		}
		if r, _ := q.Size(context.Background()); r != n-4 {
			t.Fatalf("ready = %d, want %d untouched", r, n-4)
		}
		// Items leased ahead but never handled went back with no attempt
		// counted.
		for range n - 4 {
			d := receiveWithinInt(t, q)
			if d.Attempt != 1 {
				t.Fatalf("item %d came back as attempt %d", d.Value, d.Attempt)
			}
			_ = d.Ack(context.Background())
		}
	})
}

// Consume extends the lease of a handler that runs past the visibility
// timeout, so a second consumer does not get the item meanwhile.
func TestConsumeExtendsLeases(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		vis := blocking.WithVisibilityTimeout(150 * time.Millisecond)
		q := blocking.New[string](rdb, name, vis)
		defer q.Close()
		other := blocking.New[string](redistest.NewClientLike(t, rdb), name, vis)
		defer other.Close()
		if _, err := q.Offer(context.Background(), "long job"); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		started := make(chan struct{})
		returned := make(chan error, 1)
		go func() {
			returned <- q.Consume(ctx, func(context.Context, *blocking.Delivery[string]) error {
				calls.Add(1)
				close(started)
				time.Sleep(800 * time.Millisecond)
				cancel()
				return nil
			})
		}()
		<-started
		seedtest.ExpectNothing(t, other, 1200*time.Millisecond)
		<-returned
		if calls.Load() != 1 {
			t.Fatalf("handler ran %d times", calls.Load())
		}
		seedtest.ExpectNothing(t, other, 400*time.Millisecond)
	})
}

// Consume survives Redis errors while receiving and resumes.
func TestConsumeSurvivesRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, redistest.WithAOF())
	rdb := srv.Client(t)
	q := blocking.New[string](rdb, redistest.QueueName(t))
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 10)
	returned := make(chan error, 1)
	go func() {
		returned <- q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			got <- d.Value
			return nil
		})
	}()
	if _, err := q.Offer(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if v := <-got; v != "before" {
		t.Fatalf("got %q", v)
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Offer(ctx, "after"); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != "after" {
			t.Fatalf("got %q", v)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Consume did not resume after the restart")
	}
	cancel()
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume = %v", err)
	}
}

func receiveWithinInt(t *testing.T, q *blocking.Queue[int]) *blocking.Delivery[int] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return d
}

// Handlers that are free get work while others run long: two slow items
// hold two of four handlers, and the other two handle the rest. Before
// the fix each of Consume's two receivers gathered part of a batch of
// four free slots and both waited, so the two free handlers idled until
// the slow ones returned.
func TestConsumeFreeHandlersWorkBesideSlowOnes(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	q := blocking.New[int](rdb, redistest.QueueName(t))
	defer q.Close()
	ctx := context.Background()
	const n = 200
	for i := range n {
		if _, err := q.Offer(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	gate := make(chan struct{})
	var fast atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[int]) error {
			if d.Value < 2 {
				<-gate // the two slow items
				return nil
			}
			fast.Add(1)
			return nil
		}, blocking.WithConcurrency(4))
	}()
	defer func() {
		close(gate)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Consume = %v", err)
		}
	}()
	// The bound leaves room for a loaded machine: the items take a few
	// tens of milliseconds when the free handlers get them.
	redistest.WaitFor(t, 10*time.Second, "every fast item handled while the slow ones run", func() bool {
		return fast.Load() == n-2
	})
}
