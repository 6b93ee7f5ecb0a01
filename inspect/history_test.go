package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// historySum adds up the samples of the queue's History.
func historySum(t *testing.T, in *inspect.Inspector, name string, since time.Time) (processed, failed int64, samples []inspect.Sample) {
	t.Helper()
	samples, err := in.History(context.Background(), name, since)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		processed += s.Processed
		failed += s.Failed
	}
	return processed, failed, samples
}

// TestProcessedFailed: every way an item is settled counts once: Take and
// Ack as processed; Nack, a handler's error, a lease that expired as
// failed; a second Ack of the same delivery counts nothing. Stats has the
// totals, History the same per minute.
func TestProcessedFailed(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		start := time.Now().Add(-time.Minute)
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(300*time.Millisecond),
			blocking.WithSweepInterval(50*time.Millisecond), blocking.WithMaxAttempts(5))
		t.Cleanup(func() { _ = q.Close() })
		for i := range 6 {
			if _, err := q.Offer(ctx, fmt.Sprint(i)); err != nil {
				t.Fatal(err)
			}
		}
		// Take twice: 2 processed.
		for range 2 {
			if _, err := q.Take(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Receive and Ack, then Ack again: 1 processed.
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := d.Ack(ctx); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("second Ack: %v, want ErrLeaseLost", err)
		}
		// Nack: 1 failed; a second Nack of it counts nothing.
		d = seedtest.ReceiveWithin(t, q, 5*time.Second)
		if err := d.Nack(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
		_ = d.Nack(ctx, time.Hour)
		// A lease that expires: 1 failed, once reclaimed.
		d = seedtest.ReceiveWithin(t, q, 5*time.Second)
		redistest.WaitFor(t, 10*time.Second, "the expired lease reclaimed", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Failed == 2
		})
		// A handler's error under Consume: 1 failed; then 2 acked.
		cctx, cancel := context.WithCancel(ctx)
		failedOnce := false
		done := make(chan error, 1)
		go func() {
			done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
				if !failedOnce {
					failedOnce = true
					return errors.New("boom")
				}
				return nil
			}, blocking.WithBackoff(seedtest.FastBackoff))
		}()
		redistest.WaitFor(t, 10*time.Second, "everything settled", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Ready == 0 && st.Inflight == 0 && st.Processed == 5
		})
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// 2 taken + 1 acked + the expired one and the other two acked by
		// Consume; 1 nack + 1 expired lease + 1 handler error.
		if st.Processed != 5 || st.Failed != 3 {
			t.Fatalf("Processed %d, Failed %d; want 5 and 3", st.Processed, st.Failed)
		}
		in := inspect.New(rdb)
		ist, err := in.Stats(ctx, name)
		if err != nil || ist.Processed != 5 || ist.Failed != 3 {
			t.Fatalf("inspect Stats: %+v, %v", ist, err)
		}
		p, f, samples := historySum(t, in, name, start)
		if p != 5 || f != 3 {
			t.Fatalf("History sums to %d processed, %d failed; want 5 and 3: %+v", p, f, samples)
		}
		if len(samples) < 2 || len(samples) > 4 {
			t.Fatalf("History since a minute ago: %d samples", len(samples))
		}
		for i, s := range samples {
			if s.At.Second() != 0 || s.At.Nanosecond() != 0 || (i > 0 && !s.At.Equal(samples[i-1].At.Add(time.Minute))) {
				t.Fatalf("samples not one per minute: %+v", samples)
			}
		}
		// The zero time and a time long past start 24 h ago.
		for _, since := range []time.Time{{}, time.Now().Add(-72 * time.Hour)} {
			if _, _, all := historySum(t, in, name, since); len(all) != 1440 {
				t.Fatalf("History since %v: %d samples, want 1440", since, len(all))
			}
		}
		// A time to come: none.
		if _, _, none := historySum(t, in, name, time.Now().Add(time.Hour)); len(none) != 0 {
			t.Fatalf("History from an hour ahead: %d samples", len(none))
		}
	})
}

// TestHistoryBounded: the history hash keeps at most a day of minutes, and
// expires: fields older than a day are dropped by the first count of a new
// minute.
func TestHistoryBounded(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	k := redistest.KeysOf(name).History
	now := time.Now().UnixMilli() / 60000
	// Minutes a week old, a day and one minute old, and an hour old.
	old := map[string]any{}
	for m := now - 7*1440; m < now-7*1440+500; m++ {
		old[fmt.Sprintf("%dp", m)] = 3
	}
	old[fmt.Sprintf("%dp", now-1441)] = 4
	old[fmt.Sprintf("%df", now-60)] = 2
	if err := rdb.HSet(ctx, k, old).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Offer(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Take(ctx); err != nil {
		t.Fatal(err)
	}
	fields, err := rdb.HKeys(ctx, k).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(fields)
	want := []string{fmt.Sprintf("%df", now-60), fmt.Sprintf("%dp", now)}
	if !slices.Equal(fields, want) && !slices.Equal(fields, []string{fmt.Sprintf("%df", now-60), fmt.Sprintf("%dp", now+1)}) {
		t.Fatalf("history fields %v, want %v", fields, want)
	}
	ttl, err := rdb.PTTL(ctx, k).Result()
	if err != nil || ttl <= 24*time.Hour || ttl > 25*time.Hour {
		t.Fatalf("history expires in %v (%v), want between 24 h and 25 h", ttl, err)
	}
}
