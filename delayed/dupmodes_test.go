package delayed_test

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

// takeWithin takes one item or fails the test after within.
func takeWithin[T any](t *testing.T, take func(context.Context) (T, error), within time.Duration) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	v, err := take(ctx)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	return v
}

// nothingWithin fails the test if take returns an item within d.
func nothingWithin[T any](t *testing.T, take func(context.Context) (T, error), d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if v, err := take(ctx); err == nil {
		t.Fatalf("unexpected item %v", v)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal(err)
	}
}

func TestWithReplace(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		// The replaced item is checked while it is still pending, before
		// its due time: the transfer may move it once due. When the checks
		// fail after the lead has passed (a loaded machine stalled between
		// the replace and the checks), start again on a new queue with a
		// longer lead; within the lead, a failure is the library's.
		var (
			q  *blocking.Queue[string]
			dq *delayed.Queue[string]
		)
		for lead := 200 * time.Millisecond; ; lead *= 2 {
			q, dq = open[string](t, rdb, redistest.QueueName(t))
			if _, err := dq.Offer(ctx, "first", time.Hour, delayed.WithID("x"), delayed.WithHeaders(map[string]string{"v": "1"})); err != nil {
				t.Fatal(err)
			}
			before, err := dq.Get(ctx, "x")
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			id, err := dq.Offer(ctx, "second", lead, delayed.WithID("x"), delayed.WithReplace(),
				delayed.WithHeaders(map[string]string{"v": "2"}))
			if err != nil || id != "x" {
				t.Fatalf("replace = %q, %v", id, err)
			}
			after, getErr := dq.Get(ctx, "x")
			n, sizeErr := dq.Size(ctx)
			var fail string
			switch {
			case getErr != nil:
				fail = getErr.Error()
			case after.Value != "second" || after.Headers["v"] != "2" || !after.EnqueuedAt.Equal(before.EnqueuedAt) ||
				time.Until(after.DueAt) > lead+50*time.Millisecond:
				fail = fmt.Sprintf("after replace: %+v (before %+v)", after, before)
			case sizeErr != nil || n != 1:
				fail = fmt.Sprintf("%d pending after replace (%v), want 1", n, sizeErr)
			}
			if fail == "" {
				break
			}
			if elapsed := time.Since(start); elapsed < lead || lead >= 5*time.Second {
				t.Fatalf("%s (checked %v after the replace, due %v after it)", fail, elapsed, lead)
			}
		}
		if v := takeWithin(t, q.Take, 5*time.Second); v != "second" {
			t.Fatalf("took %q", v)
		}
		nothingWithin(t, q.Take, 300*time.Millisecond)
		// Nothing pending: a replace is a plain offer.
		if _, err := dq.Offer(ctx, "third", 0, delayed.WithID("x"), delayed.WithReplace()); err != nil {
			t.Fatal(err)
		}
		if v := takeWithin(t, q.Take, 5*time.Second); v != "third" {
			t.Fatalf("took %q", v)
		}
	})
}

// A stream of debounced offers fires maxWait after the first, with the
// latest value; the next offer starts a new window.
func TestWithDebounce(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		var (
			q         *blocking.Queue[string]
			dq        *delayed.Queue[string]
			maxWait   time.Duration
			first, it delayed.Item[string]
			err       error
		)
		debounce := func(v string) {
			t.Helper()
			if id, err := dq.Offer(ctx, v, time.Hour, delayed.WithID("doc"), delayed.WithDebounce(maxWait)); err != nil || id != "doc" {
				t.Fatalf("debounce %s = %q, %v", v, id, err)
			}
		}
		// The stream's offers must all come within maxWait of the first: a
		// loaded machine can stall longer, and then the test starts again
		// on a new queue with a longer maxWait.
		for maxWait = 700 * time.Millisecond; ; maxWait *= 2 {
			q, dq = open[string](t, rdb, redistest.QueueName(t))
			debounce("v1") // nothing pending: due in an hour
			if first, err = dq.Get(ctx, "doc"); err != nil {
				t.Fatal(err)
			}
			debounce("v2") // now bounded by the first offer's time + maxWait
			debounce("v3")
			it, err = dq.Get(ctx, "doc")
			if time.Now().Before(first.EnqueuedAt.Add(maxWait)) {
				if err != nil {
					t.Fatal(err)
				}
				break
			}
			if maxWait > 10*time.Second {
				t.Fatalf("the stream never came within maxWait (%v)", maxWait)
			}
		}
		if want := first.EnqueuedAt.Add(maxWait); !it.DueAt.Equal(want) || it.Value != "v3" {
			t.Fatalf("after the stream: due %v, value %q; want due %v (first offer + maxWait), v3", it.DueAt, it.Value, want)
		}
		v := takeWithin(t, q.Take, 5*time.Second)
		if v != "v3" {
			t.Fatalf("took %q, want v3", v)
		}
		if took := time.Now(); took.Before(first.EnqueuedAt.Add(maxWait)) {
			t.Fatalf("fired at %v, before the bound %v", took, first.EnqueuedAt.Add(maxWait))
		}
		// A new stream starts a new window.
		debounce("w1")
		if it, err := dq.Get(ctx, "doc"); err != nil || time.Until(it.DueAt) < 50*time.Minute {
			t.Fatalf("a new stream's first offer: %+v, %v", it, err)
		}
	})
}

func TestWithUniqueFor(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q, dq := open[string](t, rdb, name)
		const window = 1500 * time.Millisecond
		offer := func(v string) error {
			_, err := dq.Offer(ctx, v, 0, delayed.WithID("pay-1"), delayed.WithUniqueFor(window))
			return err
		}
		start := time.Now()
		if err := offer("a"); err != nil {
			t.Fatal(err)
		}
		if v := takeWithin(t, q.Take, 5*time.Second); v != "a" {
			t.Fatalf("took %q", v)
		}
		// Delivered, but within the window: refused.
		if err := offer("b"); !errors.Is(err, delayed.ErrDuplicate) {
			if time.Since(start) < window {
				t.Fatalf("second offer within the window = %v, want ErrDuplicate", err)
			}
		}
		ttl, err := rdb.PTTL(ctx, redistest.KeysOf(name).Unique("pay-1")).Result()
		if err != nil || ttl > window || ttl <= 0 && time.Since(start) < window {
			// (A loaded machine can take the whole window to get here:
			// then the key is gone, as it should be.)
			t.Fatalf("the window's key has TTL %v, %v; want it to expire within %v", ttl, err, window)
		}
		var accepted time.Duration
		redistest.WaitFor(t, 3*window, "the window to pass", func() bool {
			sent := time.Since(start)
			if err := offer("c"); err != nil {
				return false
			}
			accepted = sent
			return true
		})
		if v := takeWithin(t, q.Take, 5*time.Second); v != "c" {
			t.Fatalf("took %q", v)
		}
		// The window starts when the first offer runs, after start; the
		// server's clock may be a few milliseconds off the monotonic one.
		if accepted < window-20*time.Millisecond {
			t.Fatalf("accepted again %v after the first, within the %v window", accepted, window)
		}
	})
}

// Eight goroutines replacing (or debouncing) one ID while a transfer
// runs leave one pending item; the last replace's value is the one
// delivered, once.
func TestDuplicateModesRace(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opt  delayed.OfferOption
	}{{"replace", delayed.WithReplace()}, {"debounce", delayed.WithDebounce(time.Hour)}} {
		t.Run(mode.name, func(t *testing.T) {
			redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := context.Background()
				q, dq := open[string](t, rdb, redistest.QueueName(t))
				var wg sync.WaitGroup
				for g := range 8 {
					wg.Go(func() {
						for i := range 30 {
							if _, err := dq.Offer(ctx, fmt.Sprint(g, "-", i), time.Hour, delayed.WithID("k"), mode.opt); err != nil {
								t.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				if n, err := dq.Size(ctx); err != nil || n != 1 {
					t.Fatalf("%d pending after the race, %v; want 1", n, err)
				}
				if _, err := dq.Offer(ctx, "last", 100*time.Millisecond, delayed.WithID("k"), mode.opt); err != nil {
					t.Fatal(err)
				}
				if v := takeWithin(t, q.Take, 5*time.Second); v != "last" {
					t.Fatalf("took %q, want the last value", v)
				}
				nothingWithin(t, q.Take, 500*time.Millisecond)
			})
		})
	}
}

func TestDuplicateModesBadInput(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	_, dq := open[string](t, rdb, "q", delayed.WithoutTransfer())
	cases := map[string][]delayed.OfferOption{
		"replace without id":   {delayed.WithReplace()},
		"debounce without id":  {delayed.WithDebounce(time.Second)},
		"unique without id":    {delayed.WithUniqueFor(time.Second)},
		"replace and debounce": {delayed.WithID("a"), delayed.WithReplace(), delayed.WithDebounce(time.Second)},
		"replace and unique":   {delayed.WithID("a"), delayed.WithUniqueFor(time.Second), delayed.WithReplace()},
		"zero max wait":        {delayed.WithID("a"), delayed.WithDebounce(0)},
		"negative window":      {delayed.WithID("a"), delayed.WithUniqueFor(-time.Second)},
		"window past 2255":     {delayed.WithID("a"), delayed.WithUniqueFor(1<<63 - 1)},
	}
	for name, opts := range cases {
		if _, err := dq.Offer(ctx, "v", time.Minute, opts...); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if _, err := dq.OfferBatch(ctx, []string{"a"}, time.Minute, delayed.WithReplace()); !errors.Is(err, delayed.ErrInvalidArgument) {
		t.Errorf("OfferBatch with WithReplace: %v, want ErrInvalidArgument", err)
	}
	if n, _ := dq.Size(ctx); n != 0 {
		t.Errorf("%d pending after refused offers", n)
	}
}
