package blocking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
)

func TestPeekBatchPurgeStats(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxAttempts(1))
		t.Cleanup(func() { _ = q.Close() })
		for _, v := range []string{"a", "b", "c", "d", "e"} {
			if _, err := q.Offer(ctx, v, blocking.WithID("id-"+v)); err != nil {
				t.Fatal(err)
			}
		}
		peeked, err := q.Peek(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(peeked) != 3 || peeked[0].Value != "a" || peeked[2].Value != "c" || peeked[0].ID != "id-a" {
			t.Fatalf("Peek = %+v", peeked)
		}
		if n, _ := q.Size(ctx); n != 5 {
			t.Fatalf("Size after Peek = %d", n)
		}
		ds, err := q.ReceiveBatch(ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].Value != "a" || ds[1].Value != "b" {
			t.Fatalf("ReceiveBatch = %d deliveries", len(ds))
		}
		vs, err := q.TakeBatch(ctx, 2)
		if err != nil || len(vs) != 2 || vs[0] != "c" || vs[1] != "d" {
			t.Fatalf("TakeBatch = %v, %v", vs, err)
		}
		if err := ds[1].Nack(ctx, 0); err != nil { // max attempts 1: dead
			t.Fatal(err)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != 1 || st.Inflight != 1 || st.Dead != 1 || st.Delayed != 0 || st.Paused || st.Latency <= 0 || !st.NextDue.IsZero() {
			t.Fatalf("Stats = %+v", st)
		}
		if err := q.RedriveID(ctx, "id-b"); err != nil {
			t.Fatal(err)
		}
		if err := q.RedriveID(ctx, "id-b"); !errors.Is(err, blocking.ErrNotFound) {
			t.Fatalf("second RedriveID = %v", err)
		}
		n, err := q.Purge(ctx)
		if err != nil || n != 2 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		if _, err := q.Peek(ctx, 0); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Fatalf("Peek(0) = %v", err)
		}
	})
}

func TestPauseStopsReceiveAndTake(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		other := blocking.New[string](redistest.NewClientLike(t, rdb), name)
		t.Cleanup(func() { _ = q.Close(); _ = other.Close() })
		if _, ok, err := q.Poll(ctx, 0); err != nil || ok {
			t.Fatal(ok, err)
		}
		if err := other.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		if _, err := other.Offer(ctx, "x"); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := q.Poll(ctx, 300*time.Millisecond); err != nil || ok {
			t.Fatalf("Poll while paused = %v, %v", ok, err)
		}
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if _, err := q.Receive(rctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Receive while paused = %v", err)
		}
		cancel()
		st, _ := q.Stats(ctx)
		if !st.Paused || st.Ready != 1 {
			t.Fatalf("Stats while paused = %+v", st)
		}
		got := make(chan string, 1)
		go func() {
			v, err := q.Take(ctx)
			if err != nil {
				v = err.Error()
			}
			got <- v
		}()
		time.Sleep(200 * time.Millisecond)
		if err := other.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case v := <-got:
			if v != "x" {
				t.Fatal(v)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Take did not return after Resume")
		}
	})
}
