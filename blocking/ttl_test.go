package blocking_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// This file proves WithTTL: an item not delivered by its due time + TTL
// is never delivered, by Take, Receive or Consume, and is in the dead
// letters with the error "expired"; an item delivered in time is handled
// as any other; the deadline does not move with retries.

// ttlDead returns the IDs in name's dead letters whose error is "expired".
func ttlDead(t *testing.T, rdb redis.UniversalClient, name string) []string {
	t.Helper()
	var ids []string
	for _, it := range deadItems(t, rdb, name) {
		if it.Headers[blocking.HeaderError] != "expired" {
			t.Errorf("dead letter %s has error %q", it.ID, it.Headers[blocking.HeaderError])
			continue
		}
		if len(it.Errors) == 0 || it.Errors[len(it.Errors)-1] != "expired" || it.DeadAt.IsZero() {
			t.Errorf("dead letter %s: errors %q, dead at %v; want expired last, and a time", it.ID, it.Errors, it.DeadAt)
		}
		// The deadline ended when the item was dead-lettered.
		if !it.Deadline.IsZero() {
			t.Errorf("dead letter %s: deadline %v, want none", it.ID, it.Deadline)
		}
		ids = append(ids, it.ID)
	}
	slices.Sort(ids)
	return ids
}

func TestTTLExpiredNeverDelivered(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for _, how := range []string{"take", "receive", "consume", "take from partitions", "receive from partitions"} {
			t.Run(how, func(t *testing.T) {
				name := redistest.QueueName(t)
				var opts []blocking.Option
				if strings.HasSuffix(how, " from partitions") {
					opts = append(opts, blocking.WithPartitions(3))
					how = strings.TrimSuffix(how, " from partitions")
				}
				q := blocking.New[string](rdb, name, opts...)
				defer q.Close()
				dq := delayed.New(q)
				defer dq.Close()
				// Two ready items and one delayed item whose TTL passes
				// before anyone consumes, one with a TTL long enough, one
				// without; one of priority.
				mustOffer := func(id, v string, opts ...blocking.OfferOption) {
					t.Helper()
					if _, err := q.Offer(ctx, v, append(opts, blocking.WithID(id))...); err != nil {
						t.Fatal(err)
					}
				}
				mustOffer("x1", "expires", blocking.WithTTL(20*time.Millisecond))
				mustOffer("x2", "expires too", blocking.WithTTL(20*time.Millisecond), blocking.WithPriority(4))
				if _, err := dq.Offer(ctx, "expires as well", 10*time.Millisecond, delayed.WithID("x3"), delayed.WithTTL(20*time.Millisecond)); err != nil {
					t.Fatal(err)
				}
				mustOffer("k1", "in time", blocking.WithTTL(time.Hour))
				mustOffer("k2", "no ttl")
				time.Sleep(150 * time.Millisecond)
				// x3 must be out of the delayed set before anyone consumes
				// (a loaded machine can hold the transfer back longer).
				redistest.WaitFor(t, 10*time.Second, "x3 transferred", func() bool {
					n, err := dq.Size(ctx)
					return err == nil && n == 0
				})

				var got []string
				switch how {
				case "take":
					for range 2 {
						v, err := q.Take(ctx)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, v)
					}
				case "receive":
					for range 2 {
						d, err := q.Receive(ctx)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, d.Value)
						if err := d.Ack(ctx); err != nil {
							t.Fatal(err)
						}
					}
				case "consume":
					cctx, cancel := context.WithCancel(ctx)
					var mu sync.Mutex
					done := make(chan error, 1)
					go func() {
						done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
							mu.Lock()
							defer mu.Unlock()
							got = append(got, d.Value)
							if len(got) == 2 {
								cancel()
							}
							return nil
						}, blocking.WithConcurrency(4))
					}()
					if err := <-done; !errors.Is(err, context.Canceled) {
						t.Fatal(err)
					}
				}
				slices.Sort(got)
				if !slices.Equal(got, []string{"in time", "no ttl"}) {
					t.Fatalf("delivered %q, want the two items in time", got)
				}
				if v, ok, err := q.Poll(ctx, 50*time.Millisecond); err != nil || ok {
					t.Fatalf("Poll after: %q, %v, %v; want nothing", v, ok, err)
				}
				if ids := ttlDead(t, rdb, name); !slices.Equal(ids, []string{"x1", "x2", "x3"}) {
					t.Fatalf("expired dead letters %q, want x1 x2 x3", ids)
				}
			})
		}
	})
}

// A delayed item's TTL runs from its due time, not from its offer; a retry
// does not move the deadline.
func TestTTLFromDueTimeNotMovedByRetries(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		// Due in 300 ms with a TTL of 200 ms: a consumer waiting gets it,
		// although more than the TTL has passed since the offer. A loaded
		// machine may hand it over more than the TTL after its due time;
		// the item then expires as it must (it is in the dead letters),
		// and the test starts again on a new queue with the delay, the TTL
		// and the retry's delay all doubled: the TTL stays shorter than the
		// delay, so a deadline counted from the offer still fails the test.
		var (
			name string
			q    *blocking.Queue[string]
			d    *blocking.Delivery[string]
			ttl  time.Duration
		)
		for k := time.Duration(1); ; k *= 2 {
			delay := 300 * time.Millisecond * k
			ttl = 200 * time.Millisecond * k
			name = redistest.QueueName(t)
			q = blocking.New[string](rdb, name)
			defer q.Close()
			dq := delayed.New(q)
			defer dq.Close()
			if _, err := dq.Offer(ctx, "late but due", delay, delayed.WithID("a"), delayed.WithTTL(ttl)); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, delay+ttl+5*time.Second)
			var err error
			d, err = q.Receive(rctx)
			cancel()
			if err == nil {
				break
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatal(err)
			}
			if ids := ttlDead(t, rdb, name); !slices.Equal(ids, []string{"a"}) || k >= 8 {
				t.Fatalf("a consumer waiting from the offer did not get the item due in %v with a TTL of %v (expired dead letters %q)", delay, ttl, ids)
			}
			t.Logf("the item expired before it reached the waiting consumer (TTL %v); trying again with a TTL of %v", ttl, 2*ttl)
		}
		if d.ID != "a" {
			t.Fatalf("received %s", d.ID)
		}
		// Nacked past its deadline: the retry is not delivered.
		if err := d.Nack(ctx, 2*ttl); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "marker", blocking.WithID("m")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * ttl)
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		d2, err := q.Receive(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if d2.ID != "m" {
			t.Fatalf("received %s, want the marker only", d2.ID)
		}
		_ = d2.Ack(ctx)
		redistest.WaitFor(t, 3*time.Second, "the retry in the dead letters", func() bool {
			// The retry becomes ready when due; a receive finds it expired.
			_, _, _ = q.Poll(ctx, 10*time.Millisecond)
			st, err := q.Stats(ctx)
			return err == nil && st.Dead == 1
		})
		if ids := ttlDead(t, rdb, name); !slices.Equal(ids, []string{"a"}) {
			t.Fatalf("expired dead letters %q, want a", ids)
		}
	})
}

func TestTTLOption(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t))
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()
	for _, d := range []time.Duration{-time.Second, time.Microsecond, 11 * 365 * 24 * time.Hour} {
		if _, err := q.Offer(ctx, "x", blocking.WithTTL(d)); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Errorf("blocking.WithTTL(%v): %v, want ErrInvalidArgument", d, err)
		}
		if _, err := dq.Offer(ctx, "x", time.Second, delayed.WithTTL(d)); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("delayed.WithTTL(%v): %v, want ErrInvalidArgument", d, err)
		}
		if _, err := dq.OfferBatch(ctx, []string{"x"}, time.Second, delayed.WithTTL(d)); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("OfferBatch with WithTTL(%v): %v, want ErrInvalidArgument", d, err)
		}
	}
	if n, _ := q.Size(ctx); n != 0 {
		t.Errorf("refused offers stored %d items", n)
	}
}
