package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// This file proves WithPriority: the take order of Take, TakeBatch,
// Receive, ReceiveBatch and Consume is by priority, then FIFO; a blocked
// consumer wakes for an item of priority; priority survives Nack, an
// expired lease, the dead letters and a redrive; a delayed item is never
// ready before its due time whatever its priority; Peek, Stats, Size and
// Purge see the priority set.

// prItem is one offered item of a priority test.
type prItem struct {
	v string
	p int
	i int // offer order
}

// prMix offers n ready items of random priorities 0..9 (a fixed seed; some
// with headers, so the scripts read past them to the priority) and returns
// them in the order they must be taken: by priority, then offer order.
func prMix(t *testing.T, q *blocking.Queue[string], n int) []prItem {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, uint64(n)))
	items := make([]prItem, n)
	for i := range items {
		p := r.IntN(blocking.MaxPriority + 1)
		items[i] = prItem{v: fmt.Sprintf("v%04d-p%d", i, p), p: p, i: i}
		opts := []blocking.OfferOption{blocking.WithPriority(p)}
		if i%3 == 0 {
			opts = append(opts, blocking.WithHeaders(map[string]string{"k": "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv" + fmt.Sprint(i)}))
		}
		if _, err := q.Offer(ctx, items[i].v, opts...); err != nil {
			t.Fatal(err)
		}
	}
	want := slices.Clone(items)
	slices.SortStableFunc(want, func(a, b prItem) int { return b.p - a.p })
	return want
}

// prCheck compares a take order with the expected one.
func prCheck(t *testing.T, got []string, want []prItem) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("took %d items, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i].v {
			t.Fatalf("item %d taken = %s, want %s (priority %d, then offer order)", i, got[i], want[i].v, want[i].p)
		}
	}
}

// prCheckOvertakes is prCheck for a consumer that leases items ahead of
// its handlers: every expected item is taken once, and none is taken before
// more than ahead of the items that come before it. (An item is leased
// only once every item before it was leased; when it is handled, at most
// the other leased-ahead items are left unhandled. A late item is not a
// fault: a receiver may be slow to hand over what it leased.)
func prCheckOvertakes(t *testing.T, got []string, want []prItem, ahead int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("took %d items, want %d", len(got), len(want))
	}
	pos := make(map[string]int, len(want))
	for i, w := range want {
		pos[w.v] = i
	}
	seen := make(map[string]bool, len(got))
	for i, v := range got {
		p, ok := pos[v]
		if !ok || seen[v] {
			t.Fatalf("item %d taken = %s: unknown or taken twice", i, v)
		}
		seen[v] = true
		if p > i+ahead {
			t.Fatalf("item %d taken = %s (priority %d), whose place is %d: it passed more than %d items that come before it", i, v, want[p].p, p, ahead)
		}
	}
}

func TestPriorityTakeOrder(t *testing.T) {
	t.Parallel()
	const n = 1000
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for _, mode := range []string{"Take", "TakeBatch", "Receive", "ReceiveBatch", "Consume"} {
			t.Run(mode, func(t *testing.T) {
				name := redistest.QueueName(t)
				// The producer and the consumer are separate queue values:
				// the consumer learns of the priorities from Redis alone.
				prod := blocking.New[string](rdb, name)
				t.Cleanup(func() { _ = prod.Close() })
				want := prMix(t, prod, n)
				if st, err := prod.Stats(ctx); err != nil || st.Ready != n {
					t.Fatalf("Stats = %+v, %v; want Ready %d", st, err, n)
				}
				if size, err := prod.Size(ctx); err != nil || size != n {
					t.Fatalf("Size = %d, %v", size, err)
				}
				peek, err := prod.Peek(ctx, 20)
				if err != nil || len(peek) != 20 {
					t.Fatalf("Peek = %d items, %v", len(peek), err)
				}
				for i, it := range peek {
					if it.Value != want[i].v || it.Priority != want[i].p {
						t.Fatalf("Peek[%d] = %s priority %d, want %s priority %d", i, it.Value, it.Priority, want[i].v, want[i].p)
					}
				}
				cons := blocking.New[string](redistest.NewClientLike(t, rdb), name)
				t.Cleanup(func() { _ = cons.Close() })
				got := prDrain(t, cons, mode, n, want)
				if mode == "Consume" {
					// Consume leases up to 2 × concurrency items ahead of
					// its handlers, from two receivers that hand them over
					// concurrently: an item may be handled late, but it
					// passes at most 2 × concurrency - 1 items that come
					// before it.
					prCheckOvertakes(t, got, want, 1)
				} else {
					prCheck(t, got, want)
				}
				if size, err := cons.Size(ctx); err != nil || size != 0 {
					t.Fatalf("Size after the drain = %d, %v", size, err)
				}
			})
		}
	})
}

// prDrain takes n items from q with the given consuming call.
func prDrain(t *testing.T, q *blocking.Queue[string], mode string, n int, want []prItem) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []string
	for len(got) < n {
		switch mode {
		case "Take":
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, v)
		case "TakeBatch":
			vs, err := q.TakeBatch(ctx, 37)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, vs...)
		case "Receive":
			d, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d.Priority != want[len(got)].p {
				t.Fatalf("Delivery %s has Priority %d, want %d", d.Value, d.Priority, want[len(got)].p)
			}
			got = append(got, d.Value)
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		case "ReceiveBatch":
			ds, err := q.ReceiveBatch(ctx, 37)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				got = append(got, d.Value)
				if err := d.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		case "Consume":
			var mu sync.Mutex
			cctx, stop := context.WithCancel(ctx)
			err := q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, d.Value)
				if len(got) == n {
					stop()
				}
				return nil
			}, blocking.WithConcurrency(1))
			stop()
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
		}
	}
	return got
}

func TestPriorityWakesBlockedConsumers(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := redistest.QueueName(t)
		prod := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = prod.Close() })
		// Three consumers block on the empty queue: two Take, one Receive,
		// each of its own queue value.
		type got struct {
			v   string
			err error
		}
		out := make(chan got, 3)
		for i := range 3 {
			c := blocking.New[string](redistest.NewClientLike(t, rdb), name)
			t.Cleanup(func() { _ = c.Close() })
			go func() {
				if i == 2 {
					d, err := c.Receive(ctx)
					if err != nil {
						out <- got{err: err}
						return
					}
					out <- got{v: d.Value, err: d.Ack(ctx)}
					return
				}
				v, err := c.Take(ctx)
				out <- got{v, err}
			}()
		}
		time.Sleep(300 * time.Millisecond) // let them block
		// Items of priority only: each must wake one consumer (the wake
		// chain hands the marker on).
		for i := range 3 {
			if _, err := prod.Offer(ctx, fmt.Sprint("urgent-", i), blocking.WithPriority(1+i)); err != nil {
				t.Fatal(err)
			}
		}
		var vs []string
		for range 3 {
			g := <-out
			if g.err != nil {
				t.Fatal(g.err)
			}
			vs = append(vs, g.v)
		}
		slices.Sort(vs)
		if !slices.Equal(vs, []string{"urgent-0", "urgent-1", "urgent-2"}) {
			t.Fatalf("blocked consumers got %v", vs)
		}
		if st, err := prod.Stats(ctx); err != nil || st.Ready != 0 || st.Inflight != 0 {
			t.Fatalf("Stats after = %+v, %v", st, err)
		}
	})
}

func TestPriorityDueTogether(t *testing.T) {
	// Items of several priorities fall due in the same transfer while a
	// consumer is blocked: it must get the highest priority first, and a
	// delayed item of high priority is never handed out before its due
	// time.
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		// The scenario needs every offer made before the items fall due;
		// on a machine too busy for that, it is set up again (3 tries).
		for try := 1; ; try++ {
			name := fmt.Sprintf("%s-%d", redistest.QueueName(t), try)
			bq := blocking.New[string](rdb, name)
			t.Cleanup(func() { _ = bq.Close() })
			dq := delayed.New(bq)
			t.Cleanup(func() { _ = dq.Close() })
			cons := blocking.New[string](redistest.NewClientLike(t, rdb), name)
			t.Cleanup(func() { _ = cons.Close() })
			// Ready now, priority 0: taken first, since "high" is not due.
			if _, err := cons.Offer(ctx, "now"); err != nil {
				t.Fatal(err)
			}
			due := time.Now().Add(time.Second)
			for _, o := range []struct {
				v string
				p int
			}{{"plain-0", 0}, {"high", 9}, {"plain-1", 0}, {"mid", 4}} {
				if _, err := dq.OfferAt(ctx, o.v, due, delayed.WithPriority(o.p)); err != nil {
					t.Fatal(err)
				}
			}
			if time.Until(due) < 200*time.Millisecond {
				if try == 3 {
					t.Fatal("three tries could not offer four items within 800 ms")
				}
				continue
			}
			var got []string
			for range 5 {
				v, err := cons.Take(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if v == "high" && time.Now().Before(due.Add(-5*time.Millisecond)) {
					t.Fatalf("the priority 9 item was taken %v before its due time", time.Until(due))
				}
				got = append(got, v)
			}
			if want := []string{"now", "high", "mid", "plain-0", "plain-1"}; !slices.Equal(got, want) {
				t.Fatalf("take order %v, want %v", got, want)
			}
			return
		}
	})
}

func TestPrioritySurvivesNackReclaimAndRedrive(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(time.Second),
			blocking.WithSweepInterval(100*time.Millisecond), blocking.WithMaxAttempts(3))
		t.Cleanup(func() { _ = q.Close() })
		offer := func(v string, p int) {
			t.Helper()
			if _, err := q.Offer(ctx, v, blocking.WithPriority(p)); err != nil {
				t.Fatal(err)
			}
		}
		offer("low-0", 0)
		offer("urgent", 7)
		offer("low-1", 0)
		offer("mid", 3)
		receive := func(want string, attempt int) *blocking.Delivery[string] {
			t.Helper()
			d, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d.Value != want || d.Attempt != attempt {
				t.Fatalf("Receive = %s attempt %d, want %s attempt %d", d.Value, d.Attempt, want, attempt)
			}
			return d
		}
		// Nack: back first among priority 7.
		d := receive("urgent", 1)
		if d.Priority != 7 {
			t.Fatalf("Priority = %d", d.Priority)
		}
		if err := d.Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
		d = receive("urgent", 2)
		// An expired lease: the reclaimer gives it back with its priority.
		redistest.WaitFor(t, 10*time.Second, "the expired lease reclaimed", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Inflight == 0
		})
		d = receive("urgent", 3)
		// The last attempt fails: dead letter, then redriven with its
		// priority, ahead of the priority 0 and 3 items.
		if err := d.Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
		dead, err := q.DeadLetters().Peek(ctx, 10)
		if err != nil || len(dead) != 1 || dead[0].Priority != 7 {
			t.Fatalf("dead letters = %+v, %v", dead, err)
		}
		if err := q.RedriveID(ctx, d.ID); err != nil {
			t.Fatal(err)
		}
		d = receive("urgent", 1)
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"mid", "low-0", "low-1"} {
			if err := receive(want, 1).Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestPriorityRetryKeepsPriority(t *testing.T) {
	// A retry after a backoff goes through the retry set and the transfer:
	// when it is due, it is ready with its priority.
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		if _, err := q.Offer(ctx, "urgent", blocking.WithPriority(9)); err != nil {
			t.Fatal(err)
		}
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := q.Offer(ctx, fmt.Sprint("low-", i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(400 * time.Millisecond) // the retry is due, and moved
		redistest.WaitFor(t, 5*time.Second, "the retry moved", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Retry == 0
		})
		v, err := q.Take(ctx)
		if err != nil || v != "urgent" {
			t.Fatalf("Take = %s, %v; want the retried urgent item first", v, err)
		}
	})
}

func TestPriorityPurge(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		for i := range 6 {
			if _, err := q.Offer(ctx, fmt.Sprint(i), blocking.WithPriority(i%2*5)); err != nil {
				t.Fatal(err)
			}
		}
		n, err := q.Purge(ctx)
		if err != nil || n != 6 {
			t.Fatalf("Purge = %d, %v; want 6", n, err)
		}
		if size, err := q.Size(ctx); err != nil || size != 0 {
			t.Fatalf("Size after Purge = %d, %v", size, err)
		}
		if v, ok, err := q.Poll(ctx, 0); err != nil || ok {
			t.Fatalf("Poll after Purge = %q, %v, %v", v, ok, err)
		}
	})
}

func TestPriorityOutOfRange(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close() })
	for _, p := range []int{-1, blocking.MaxPriority + 1, 1 << 40} {
		if _, err := q.Offer(ctx, "x", blocking.WithPriority(p)); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Errorf("blocking Offer WithPriority(%d) = %v", p, err)
		}
		if _, err := dq.Offer(ctx, "x", time.Second, delayed.WithPriority(p)); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("delayed Offer WithPriority(%d) = %v", p, err)
		}
		if _, err := dq.OfferBatch(ctx, []string{"x"}, time.Second, delayed.WithPriority(p)); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("OfferBatch WithPriority(%d) = %v", p, err)
		}
	}
	if n, _ := q.Size(ctx); n != 0 {
		t.Fatalf("Size = %d after refused offers", n)
	}
	if n, _ := dq.Size(ctx); n != 0 {
		t.Fatalf("delayed Size = %d after refused offers", n)
	}
}

func TestPriorityMarkerLostWithAConsumer(t *testing.T) {
	// A consumer's blocking wait moved the priority marker to the claimed
	// list, and the consumer died there (kill -9): the transfer of any
	// live process puts a marker back within a sweep, so a waiting
	// consumer gets the item of priority long before the reclaimer's 30 s.
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		name := redistest.QueueName(t)
		prod := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = prod.Close() })
		if _, err := prod.Offer(ctx, "urgent", blocking.WithPriority(5)); err != nil {
			t.Fatal(err)
		}
		k := redistest.KeysOf(name)
		moved, err := rdb.LMove(ctx, k.Ready, k.Claimed, "RIGHT", "LEFT").Result()
		if err != nil || moved != "\x00" {
			t.Fatalf("LMOVE of the marker = %q, %v", moved, err)
		}
		cons := blocking.New[string](redistest.NewClientLike(t, rdb), name)
		t.Cleanup(func() { _ = cons.Close() })
		v, ok, err := cons.Poll(ctx, 10*time.Second)
		if err != nil || !ok || v != "urgent" {
			t.Fatalf("Poll = %q, %v, %v; want the item of priority within a sweep", v, ok, err)
		}
	})
}

func TestPriorityHostileKey(t *testing.T) {
	// The priority set's key holds a string (another program's, or a
	// hand-made mistake): an offer of priority fails with Redis's error
	// and stores nothing; plain offers and takes go on.
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		k := redistest.KeysOf(name)
		if err := rdb.Set(ctx, k.Prio, "not a sorted set", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "urgent", blocking.WithPriority(5)); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("Offer of priority over a string key = %v, want WRONGTYPE", err)
		}
		if n, err := rdb.LLen(ctx, k.Ready).Result(); err != nil || n != 0 {
			t.Fatalf("ready list after the failed offer: %d items, %v", n, err)
		}
		if _, err := q.Offer(ctx, "plain"); err != nil {
			t.Fatal(err)
		}
		if v, err := q.Take(ctx); err != nil || v != "plain" {
			t.Fatalf("Take = %q, %v", v, err)
		}
		// A marker left in the ready list: the receive that meets it fails
		// and gives back what it popped.
		if err := rdb.RPush(ctx, k.Ready, "\x00").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "kept"); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := q.ReceiveBatch(rctx, 2); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("ReceiveBatch past a marker with a string priority key = %v, want WRONGTYPE", err)
		}
		vals, err := rdb.LRange(ctx, k.Ready, 0, -1).Result()
		if err != nil || len(vals) != 2 || vals[1] != "\x00" {
			t.Fatalf("ready list after the failed receive = %q, %v; want the item and the marker back", vals, err)
		}
	})
}
