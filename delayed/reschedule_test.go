package delayed_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
)

// This file proves Reschedule, RescheduleAt, Promote, Update, Get,
// Contains and List against real Redis (standalone and cluster), with
// transfers running in this process and in a second client.
//
// Clocks: redis-server runs on this machine, so its TIME and Go's wall
// clock (time.Now().UnixMicro()) are the same clock. A due time the server
// computes during a call lies in [sent, returned] (+ the delay) on that
// clock. Due times stamped in envelopes (Delivery.DueAt) are truncated to
// the millisecond; Get's DueAt is exact to the microsecond.

// rscMs is one millisecond in µs: the stamped due time's resolution.
const rscMs = int64(time.Millisecond / time.Microsecond)

// rscReceive receives one delivery within d, failing the test otherwise.
func rscReceive[T any](t *testing.T, q *blocking.Queue[T], d time.Duration) (*blocking.Delivery[T], time.Time) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	dl, err := q.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return dl, time.Now()
}

// rscNothing fails the test when q delivers anything within d.
func rscNothing[T any](t *testing.T, q *blocking.Queue[T], d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	dl, err := q.Receive(ctx)
	if err == nil {
		t.Fatalf("unexpected delivery of %s (attempt %d, due %v)", dl.ID, dl.Attempt, dl.DueAt)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive: %v", err)
	}
}

// rscSnapshot is every key of a queue as raw Redis data, to prove that a
// refused call changed nothing.
func rscSnapshot(t *testing.T, rdb redis.UniversalClient, name string) string {
	t.Helper()
	ctx := context.Background()
	k := redistest.KeysOf(name)
	var b strings.Builder
	zs, err := rdb.ZRangeWithScores(ctx, k.Delayed, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "delayed=%v\n", zs)
	items, err := rdb.HGetAll(ctx, k.Items).Result()
	if err != nil {
		t.Fatal(err)
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range items {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		fmt.Fprintf(&b, "items[%q]=%q\n", id, items[id])
	}
	for _, key := range []string{k.Ready, k.Claimed, k.DeadReady} {
		l, err := rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%q\n", key, l)
	}
	for _, key := range []string{k.Retry, k.Leases} {
		l, err := rdb.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%v\n", key, l)
	}
	for _, key := range []string{k.Inflight, k.Meta} {
		h, err := rdb.HGetAll(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if key == k.Meta {
			// A transfer records the codec's name whenever it first runs.
			delete(h, "codec")
		}
		fmt.Fprintf(&b, "%s=%v\n", key, h)
	}
	return b.String()
}

// rscOpenSlowSweep opens a queue whose transfer sweeps once an hour: a
// transfer then runs only when the earliest due time comes, or when a
// wake-up message says it changed.
func rscOpenSlowSweep(t *testing.T, rdb redis.UniversalClient, name string) (*blocking.Queue[order], *delayed.Queue[order]) {
	t.Helper()
	q := blocking.New[order](rdb, name, blocking.WithSweepInterval(time.Hour))
	dq := delayed.New(q)
	t.Cleanup(func() {
		_ = dq.Close()
		_ = q.Close()
	})
	return q, dq
}

// rscAwaitSubscribers waits until n clients listen on the queue's wake-up
// channel (on a cluster, on any of its nodes).
func rscAwaitSubscribers(t *testing.T, rdb redis.UniversalClient, name string, n int64) {
	t.Helper()
	ch := redistest.KeysOf(name).Wake
	count := func() int64 {
		ctx := context.Background()
		if c, ok := rdb.(*redis.ClusterClient); ok {
			var mu sync.Mutex
			var total int64
			_ = c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
				m, err := node.PubSubNumSub(ctx, ch).Result()
				mu.Lock()
				total += m[ch]
				mu.Unlock()
				return err
			})
			return total
		}
		m, _ := rdb.PubSubNumSub(ctx, ch).Result()
		return m[ch]
	}
	redistest.WaitFor(t, 10*time.Second, "the transfers subscribed to their wake-ups", func() bool { return count() >= n })
}

// Under running transfers (one in this client, one in a second client's
// queue objects), an item rescheduled from 1 h to +300 ms fires at its new
// due time: never early, not late (< 2 s: the machine is loaded), exactly
// once; an item rescheduled from +300 ms to +1 h stays pending. The
// transfers sweep once an hour, so the earlier due time must wake them.
func TestRescheduleUnderRunningTransfer(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		// A sweep of an hour: only the wake-up that Reschedule publishes
		// can make a transfer run in time for the earlier due time.
		// (Clients are made before the first is used: NewClientLike copies
		// the options of a live client, which go-redis may be writing.)
		rdb2 := redistest.NewClientLike(t, rdb)
		q, dq := rscOpenSlowSweep(t, rdb, name)
		_, dq2 := rscOpenSlowSweep(t, rdb2, name)
		if _, ok, err := q.Poll(ctx, 0); err != nil || ok {
			t.Fatalf("Poll on an empty queue = %v, %v", ok, err)
		}
		rscAwaitSubscribers(t, rdb, name, 2)

		// The item due in 300 ms must be rescheduled before a transfer
		// moves it; on a loaded machine the two calls may be more than
		// 300 ms apart, so the attempt is repeated (with new IDs) then.
		var lateID string
		for attempt := 0; ; attempt++ {
			if attempt == 5 {
				t.Fatal("could not reschedule an item due in 300 ms within 300 ms in 5 attempts")
			}
			lateID = fmt.Sprintf("late-%d", attempt)
			if _, err := dq.Offer(ctx, order{ID: lateID}, 300*time.Millisecond, delayed.WithID(lateID)); err != nil {
				t.Fatal(err)
			}
			err := dq.Reschedule(ctx, lateID, time.Hour)
			if err == nil {
				break
			}
			if !errors.Is(err, delayed.ErrNotFound) {
				t.Fatal(err)
			}
			t.Logf("%s moved to ready before its Reschedule ran; trying again", lateID)
			d, _ := rscReceive(t, q, 5*time.Second)
			if d.ID != lateID {
				t.Fatalf("received %s, want %s", d.ID, lateID)
			}
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		lateItem, err := dq.Get(ctx, lateID)
		if err != nil {
			t.Fatal(err)
		}
		if until := time.Until(lateItem.DueAt); until < 59*time.Minute || until > time.Hour {
			t.Fatalf("%s rescheduled to +1h is due in %v", lateID, until)
		}

		if _, err := dq.Offer(ctx, order{ID: "early", Total: 7}, time.Hour, delayed.WithID("early"),
			delayed.WithHeaders(map[string]string{"h": "kept"})); err != nil {
			t.Fatal(err)
		}
		before, err := dq.Get(ctx, "early")
		if err != nil {
			t.Fatal(err)
		}
		sent := time.Now()
		if err := dq2.Reschedule(ctx, "early", 300*time.Millisecond); err != nil { // the other client
			t.Fatal(err)
		}
		returned := time.Now()
		// Get finds the item pending only before its due time, when no
		// transfer can have moved it. A loaded machine may stall past it:
		// then the delivery's due time (to the ms) is checked instead.
		lo, hi := sent.Add(300*time.Millisecond), returned.Add(300*time.Millisecond)
		it, err := dq.Get(ctx, "early")
		var due time.Time
		switch {
		case err == nil:
			due = it.DueAt
			if it.Value != before.Value || !it.EnqueuedAt.Equal(before.EnqueuedAt) || it.Headers["h"] != "kept" || it.ID != "early" {
				t.Fatalf("Reschedule changed more than the due time: %+v, was %+v", it, before)
			}
		case errors.Is(err, delayed.ErrNotFound) && !time.Now().Before(lo):
			t.Logf("early moved to ready before Get ran (%v after the reschedule): its due time is checked on delivery", time.Since(sent))
		default:
			t.Fatal(err)
		}

		d, got := rscReceive(t, q, 10*time.Second)
		if d.ID != "early" || d.Value != (order{ID: "early", Total: 7}) || d.Attempt != 1 || d.Headers["h"] != "kept" {
			t.Fatalf("delivered %+v, want early", d)
		}
		if due.IsZero() {
			due = d.DueAt
			lo, hi = lo.Truncate(time.Millisecond), hi.Truncate(time.Millisecond)
		} else if !d.DueAt.Equal(time.UnixMilli(due.UnixMilli())) {
			t.Fatalf("Delivery.DueAt = %v, want the rescheduled due time %v (to the ms)", d.DueAt, due)
		}
		if due.Before(lo.Add(-time.Millisecond)) || due.After(hi.Add(time.Millisecond)) {
			t.Fatalf("due time %v not within [%v, %v]: the delay is from the call, on the server's clock", due, lo, hi)
		}
		if got.Before(due) {
			t.Fatalf("delivered %v before its due time", due.Sub(got))
		}
		if late := got.Sub(due); late > 2*time.Second {
			t.Fatalf("delivered %v after its due time", late)
		} else {
			t.Logf("rescheduled item delivered %v after its new due time", late.Round(time.Microsecond))
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		// Exactly once, and the item pushed back by an hour stays put.
		rscNothing(t, q, 1500*time.Millisecond)
		if ok, err := dq.Contains(ctx, lateID); err != nil || !ok {
			t.Fatalf("Contains(%s) = %v, %v after it was pushed back an hour", lateID, ok, err)
		}
		if ok, err := dq.Contains(ctx, "early"); err != nil || ok {
			t.Fatalf("Contains(early) = %v, %v after it was delivered", ok, err)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Delayed != 1 || st.Ready != 0 || st.Inflight != 0 || !st.NextDue.Equal(lateItem.DueAt) {
			t.Fatalf("Stats = %+v, want 1 delayed due %v", st, lateItem.DueAt)
		}

		// RescheduleAt earlier, through the other client, to an exact time.
		at := time.Now().Add(400 * time.Millisecond).Truncate(time.Microsecond)
		if err := dq2.RescheduleAt(ctx, lateID, at); err != nil {
			t.Fatal(err)
		}
		// As above: pending only until at, and the delivery checks the due
		// time when a stall made Get late.
		if it, err := dq.Get(ctx, lateID); errors.Is(err, delayed.ErrNotFound) && !time.Now().Before(at) {
			t.Logf("%s moved to ready before Get ran: its due time is checked on delivery", lateID)
		} else if err != nil || !it.DueAt.Equal(at) {
			t.Fatalf("Get after RescheduleAt(%v) = %v, %v", at, it.DueAt, err)
		}
		d, got = rscReceive(t, q, 10*time.Second)
		if d.ID != lateID || !d.DueAt.Equal(time.UnixMilli(at.UnixMilli())) {
			t.Fatalf("delivered %s due %v, want %s due %v", d.ID, d.DueAt, lateID, at)
		}
		if got.Before(at) || got.Sub(at) > 2*time.Second {
			t.Fatalf("delivered %v after its due time", got.Sub(at))
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		rscNothing(t, q, 500*time.Millisecond)
	})
}

// Reschedule, RescheduleAt, Promote and Update of an item a transfer has
// already moved to the ready list return ErrNotFound and change nothing;
// so do they once the item was delivered.
func TestOperationsOnReadyItemNotFound(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q, dq := open[order](t, rdb, name)
		if _, err := dq.Offer(ctx, order{ID: "c", Total: 1}, 50*time.Millisecond, delayed.WithID("c")); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, order{ID: "other"}, time.Hour, delayed.WithID("other")); err != nil {
			t.Fatal(err)
		}
		redistest.WaitFor(t, 10*time.Second, "the transfer moves c to the ready list", func() bool {
			n, err := q.Size(ctx)
			return err == nil && n == 1
		})
		peek, err := q.Peek(ctx, 10)
		if err != nil || len(peek) != 1 || peek[0].ID != "c" {
			t.Fatalf("Peek = %+v, %v", peek, err)
		}
		snap := rscSnapshot(t, rdb, name)
		check := func(what string) {
			t.Helper()
			for op, err := range map[string]error{
				"Reschedule":   dq.Reschedule(ctx, "c", time.Hour),
				"Reschedule0":  dq.Reschedule(ctx, "c", 0),
				"RescheduleAt": dq.RescheduleAt(ctx, "c", time.Now().Add(time.Hour)),
				"Promote":      dq.Promote(ctx, "c"),
				"Update":       dq.Update(ctx, "c", order{ID: "c", Total: 99}),
			} {
				if !errors.Is(err, delayed.ErrNotFound) || !errors.Is(err, blocking.ErrNotFound) {
					t.Errorf("%s of a %s item = %v, want ErrNotFound", op, what, err)
				} else if !strings.Contains(err.Error(), `"c"`) {
					t.Errorf("%s error %q does not name the item", op, err)
				}
			}
			if _, err := dq.Get(ctx, "c"); !errors.Is(err, delayed.ErrNotFound) {
				t.Errorf("Get of a %s item = %v, want ErrNotFound", what, err)
			}
			if ok, err := dq.Contains(ctx, "c"); err != nil || ok {
				t.Errorf("Contains of a %s item = %v, %v", what, ok, err)
			}
			if ok, err := dq.Remove(ctx, "c"); err != nil || ok {
				t.Errorf("Remove of a %s item = %v, %v", what, ok, err)
			}
		}
		check("ready")
		if after := rscSnapshot(t, rdb, name); after != snap {
			t.Fatalf("refused operations changed the queue:\nbefore:\n%s\nafter:\n%s", snap, after)
		}
		peek2, err := q.Peek(ctx, 10)
		if err != nil || len(peek2) != 1 || peek2[0].Value != peek[0].Value || !peek2[0].DueAt.Equal(peek[0].DueAt) {
			t.Fatalf("Peek after the refused operations = %+v, was %+v", peek2, peek)
		}
		d, _ := rscReceive(t, q, 5*time.Second)
		if d.ID != "c" || d.Value.Total != 1 || !d.DueAt.Equal(peek[0].DueAt) {
			t.Fatalf("delivered %+v, want c unchanged", d)
		}
		snap = rscSnapshot(t, rdb, name)
		check("leased")
		if after := rscSnapshot(t, rdb, name); after != snap {
			t.Fatalf("refused operations changed the queue:\nbefore:\n%s\nafter:\n%s", snap, after)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		check("delivered")
		if it, err := dq.Get(ctx, "other"); err != nil || it.ID != "other" {
			t.Fatalf("Get(other) = %+v, %v", it, err)
		}
	})
}

// rscOp is one call of the concurrent test, as the model sees it.
type rscOp struct {
	kind           string // offer, reschedule, rescheduleAt, promote, remove
	sent, returned time.Time
	delay          time.Duration // offer, reschedule
	at             time.Time     // rescheduleAt
	ok             bool          // the item was pending and the call acted on it
}

// dueWindow is where the server's due time (µs) for a successful move lies.
func (o *rscOp) dueWindow() (lo, hi int64) {
	switch o.kind {
	case "rescheduleAt":
		return o.at.UnixMicro(), o.at.UnixMicro()
	case "promote":
		return o.sent.UnixMicro(), o.returned.UnixMicro()
	default: // offer, reschedule: due = server now + delay
		return o.sent.Add(o.delay).UnixMicro(), o.returned.Add(o.delay).UnixMicro()
	}
}

func (o *rscOp) String() string {
	s := fmt.Sprintf("%s ok=%v sent=%d returned=%d", o.kind, o.ok, o.sent.UnixMicro(), o.returned.UnixMicro())
	switch o.kind {
	case "offer", "reschedule":
		s += fmt.Sprintf(" delay=%v", o.delay)
	case "rescheduleAt":
		s += fmt.Sprintf(" at=%d", o.at.UnixMicro())
	}
	return s
}

type rscDelivery struct {
	id       string
	attempt  int
	dueAt    time.Time // the envelope's due time (server, ms); zero when taken (TakeBatch tells no due time)
	received time.Time // when Receive returned
}

type rscItem struct {
	mu      sync.Mutex
	ops     []*rscOp
	offered atomic.Bool
	gone    atomic.Bool // delivered or removed: only steers the choice of items
}

func (it *rscItem) add(o *rscOp) {
	it.mu.Lock()
	it.ops = append(it.ops, o)
	it.mu.Unlock()
}

// 300 items due in 0–500 ms; 1,000 concurrent Reschedule, RescheduleAt,
// Promote and Remove calls from four goroutines on two clients, while the
// transfers of both clients run and three consumers (Receive, ReceiveBatch
// and TakeBatch, one per client) take everything. The model checks, per
// item (the due-time checks only for received items: Take tells no due
// time):
//
//   - An item is pending during one interval of server time: from its
//     offer's execution until a transfer, a reschedule to the past or a
//     Promote makes it ready, or a Remove drops it. IDs are never offered
//     twice, so it never becomes pending again. Hence every call that
//     succeeded ran before every call that found it gone: the latest sent
//     time of a success is before the earliest return of a "not found".
//   - An item whose Remove succeeded is never delivered; every other item
//     is delivered exactly once (attempt 1), after every successful call on
//     it was sent.
//   - The delivered due time (stamped by the server, to the ms) is the one
//     set by the last successful call. Which call ran last is not known when
//     windows overlap, but it is one that no other success was sent after
//     (a "candidate"): the due time must lie in some candidate's window.
//   - Never early: the delivery comes after its stamped due time and after
//     the earliest due time any candidate allows.
//   - An item found gone (not removed) became ready before that call
//     returned, and an item becomes ready only once due: its due time is
//     before the return of every failed call.
//   - When all is done, nothing is left: no delayed, ready, in-flight,
//     retry or dead item.
func TestConcurrentReschedulesModel(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		const (
			n           = 300
			reschedules = 1000 // Reschedule and RescheduleAt calls; Promote and Remove besides
			workers     = 4
		)
		ctx := context.Background()
		name := redistest.QueueName(t)
		// Every client is made before the first is used: NewClientLike
		// copies the options of a live client, which go-redis may write.
		rdb2 := redistest.NewClientLike(t, rdb)
		rdb3 := redistest.NewClientLike(t, rdb)
		q1, dq1 := open[int](t, rdb, name)
		q2, dq2 := open[int](t, rdb2, name)
		q3 := blocking.New[int](rdb3, name) // at most once: TakeBatch
		t.Cleanup(func() { _ = q3.Close() })
		dqs := []*delayed.Queue[int]{dq1, dq2}

		items := make([]*rscItem, n)
		for i := range items {
			items[i] = &rscItem{}
		}
		id := func(i int) string { return fmt.Sprintf("item-%03d", i) }

		// Consumers: Receive on q1, ReceiveBatch on q2.
		var (
			delMu      sync.Mutex
			deliveries = map[string][]rscDelivery{}
			delivered  atomic.Int64
		)
		cctx, stopConsumers := context.WithCancel(ctx)
		var consumers sync.WaitGroup
		consume := func(q *blocking.Queue[int], batch int) {
			defer consumers.Done()
			for cctx.Err() == nil {
				var ds []*blocking.Delivery[int]
				var err error
				if batch == 1 {
					var d *blocking.Delivery[int]
					d, err = q.Receive(cctx)
					ds = []*blocking.Delivery[int]{d}
				} else {
					ds, err = q.ReceiveBatch(cctx, batch)
				}
				now := time.Now()
				if err != nil {
					if cctx.Err() == nil {
						t.Errorf("receive: %v", err)
					}
					return
				}
				delMu.Lock()
				for _, d := range ds {
					deliveries[d.ID] = append(deliveries[d.ID], rscDelivery{d.ID, d.Attempt, d.DueAt, now})
					items[d.Value].gone.Store(true)
				}
				delMu.Unlock()
				for _, d := range ds {
					if err := d.Ack(context.WithoutCancel(cctx)); err != nil {
						t.Errorf("ack %s: %v", d.ID, err)
					}
				}
				delivered.Add(int64(len(ds)))
			}
		}
		consumers.Add(3)
		go consume(q1, 1)
		go consume(q2, 5)
		go func() {
			defer consumers.Done()
			for cctx.Err() == nil {
				vs, err := q3.TakeBatch(cctx, 3)
				now := time.Now()
				if err != nil {
					if cctx.Err() == nil {
						t.Errorf("take: %v", err)
					}
					return
				}
				delMu.Lock()
				for _, v := range vs {
					deliveries[id(v)] = append(deliveries[id(v)], rscDelivery{id(v), 1, time.Time{}, now})
					items[v].gone.Store(true)
				}
				delMu.Unlock()
				delivered.Add(int64(len(vs)))
			}
		}()

		// Offers, from two goroutines (one per client), interleaved with
		// the operations below.
		var wg sync.WaitGroup
		for w := range 2 {
			wg.Go(func() {
				for i := w; i < n; i += 2 {
					delay := time.Duration(rand.IntN(501)) * time.Millisecond
					o := &rscOp{kind: "offer", delay: delay, sent: time.Now()}
					_, err := dqs[w].Offer(ctx, i, delay, delayed.WithID(id(i)))
					o.returned = time.Now()
					if err != nil {
						t.Errorf("offer %d: %v", i, err)
						return
					}
					o.ok = true
					items[i].add(o)
					items[i].offered.Store(true)
				}
			})
		}
		var done atomic.Int64
		var counts [5]atomic.Int64 // successes by kind: reschedule, rescheduleAt, promote, remove, not found
		for w := range workers {
			wg.Go(func() {
				dq := dqs[w%2]
				for done.Load() < reschedules {
					// Half the calls go to 30 hot items: many calls on one
					// item overlap, and race with its transfer. Items
					// still pending are preferred (a choice only: the
					// model holds whatever is picked).
					pick := func() int {
						if rand.IntN(2) == 0 {
							return rand.IntN(30)
						}
						return rand.IntN(n)
					}
					i := pick()
					for tries := 0; !items[i].offered.Load() || (tries < 20 && items[i].gone.Load()); tries++ {
						i = pick()
					}
					o := &rscOp{}
					var err error
					var found bool
					switch r := rand.IntN(100); {
					case r < 45:
						done.Add(1)
						o.kind, o.delay = "reschedule", time.Duration(rand.IntN(801))*time.Millisecond
						o.sent = time.Now()
						err = dq.Reschedule(ctx, id(i), o.delay)
					case r < 80:
						done.Add(1)
						o.kind = "rescheduleAt"
						o.sent = time.Now()
						o.at = o.sent.Add(time.Duration(rand.IntN(801)) * time.Millisecond).Truncate(time.Microsecond)
						err = dq.RescheduleAt(ctx, id(i), o.at)
					case r < 92:
						o.kind = "promote"
						o.sent = time.Now()
						err = dq.Promote(ctx, id(i))
					default:
						o.kind = "remove"
						o.sent = time.Now()
						found, err = dq.Remove(ctx, id(i))
					}
					o.returned = time.Now()
					switch {
					case o.kind == "remove" && err == nil:
						o.ok = found
						if found {
							items[i].gone.Store(true)
						}
					case err == nil:
						o.ok = true
					case errors.Is(err, delayed.ErrNotFound):
					default:
						t.Errorf("%s %s: %v", o.kind, id(i), err)
						return
					}
					if o.ok {
						counts[slices.Index([]string{"reschedule", "rescheduleAt", "promote", "remove"}, o.kind)].Add(1)
					} else {
						counts[4].Add(1)
					}
					items[i].add(o)
					if rand.IntN(4) == 0 {
						time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			stopConsumers()
			consumers.Wait()
			return
		}
		removed := 0
		for _, it := range items {
			for _, o := range it.ops {
				if o.kind == "remove" && o.ok {
					removed++
				}
			}
		}
		t.Logf("successes: %d reschedule, %d rescheduleAt, %d promote, %d remove; %d not found",
			counts[0].Load(), counts[1].Load(), counts[2].Load(), counts[3].Load(), counts[4].Load())
		want := int64(n - removed)
		deadline := time.Now().Add(30 * time.Second)
		for delivered.Load() < want && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		// Quiesce: anything more would be a duplicate or a removed item.
		time.Sleep(1500 * time.Millisecond)
		stopConsumers()
		consumers.Wait()

		st, err := q1.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Delayed != 0 || st.Ready != 0 || st.Inflight != 0 || st.Retry != 0 || st.Dead != 0 {
			t.Errorf("Stats after everything was delivered = %+v, want all zero", st)
		}
		if got := delivered.Load(); got != want {
			t.Errorf("%d deliveries, want %d (%d items, %d removed)", got, want, n, removed)
		}

		var lateness []time.Duration
		for i, it := range items {
			ds := deliveries[id(i)]
			var succ, failed []*rscOp
			var removeOp *rscOp
			for _, o := range it.ops {
				if o.ok {
					succ = append(succ, o)
					if o.kind == "remove" {
						removeOp = o
					}
				} else {
					failed = append(failed, o)
				}
			}
			history := func() string {
				var b strings.Builder
				for _, o := range it.ops {
					b.WriteString("\n\t" + o.String())
				}
				for _, d := range ds {
					fmt.Fprintf(&b, "\n\tdelivered attempt %d due %d at %d", d.attempt, d.dueAt.UnixMicro(), d.received.UnixMicro())
				}
				return b.String()
			}
			// One pending interval: every success ran before every failure.
			var lastSent time.Time
			for _, o := range succ {
				if o.sent.After(lastSent) {
					lastSent = o.sent
				}
			}
			for _, f := range failed {
				if !lastSent.Before(f.returned) {
					t.Errorf("%s: a call found the item gone before a later call found it pending:%s", id(i), history())
				}
			}
			if removeOp != nil {
				if len(ds) != 0 {
					t.Errorf("%s: removed, yet delivered:%s", id(i), history())
				}
				for _, o := range succ {
					if o != removeOp && o.kind == "remove" {
						t.Errorf("%s: removed twice:%s", id(i), history())
					}
				}
				continue
			}
			if len(ds) != 1 || ds[0].attempt != 1 {
				t.Errorf("%s: %d deliveries, want exactly one, attempt 1:%s", id(i), len(ds), history())
				continue
			}
			d := ds[0]
			dueUs := d.dueAt.UnixMicro()
			taken := d.dueAt.IsZero()
			if !taken && d.received.UnixMicro() < dueUs {
				t.Errorf("%s: delivered %d µs before its stamped due time:%s", id(i), dueUs-d.received.UnixMicro(), history())
			}
			var matched bool
			minLo := int64(1 << 62)
			for _, c := range succ {
				if !c.sent.Before(d.received) {
					t.Errorf("%s: delivered before a successful %s was sent:%s", id(i), c.kind, history())
				}
				candidate := true
				for _, o := range succ {
					if o.sent.After(c.returned) {
						candidate = false
					}
				}
				if !candidate {
					continue
				}
				lo, hi := c.dueWindow()
				minLo = min(minLo, lo)
				// Stamped to the ms, rounded down; 1 ms of slack each way.
				if lo/rscMs*rscMs-rscMs <= dueUs && dueUs <= hi+rscMs {
					matched = true
				}
			}
			if !matched && !taken {
				t.Errorf("%s: delivered with due time %d, which no possibly-last successful call set:%s", id(i), dueUs, history())
			}
			if d.received.UnixMicro() < minLo/rscMs*rscMs-rscMs {
				t.Errorf("%s: delivered %d µs before the earliest due time its last call allows:%s", id(i), minLo-d.received.UnixMicro(), history())
			}
			for _, f := range failed {
				if !taken && dueUs > f.returned.UnixMicro()+rscMs {
					t.Errorf("%s: a %s found it gone at %d, before its due time:%s", id(i), f.kind, f.returned.UnixMicro(), history())
				}
			}
			if !taken {
				lateness = append(lateness, d.received.Sub(d.dueAt))
			}
		}
		for i := range n {
			if ok, err := dq1.Contains(ctx, id(i)); err != nil || ok {
				t.Errorf("Contains(%s) = %v, %v after the run", id(i), ok, err)
			}
		}
		if len(lateness) > 0 {
			sort.Slice(lateness, func(a, b int) bool { return lateness[a] < lateness[b] })
			t.Logf("%d delivered, %d removed; lateness p50 %v, p99 %v, max %v", len(lateness), removed,
				lateness[len(lateness)/2], lateness[len(lateness)*99/100], lateness[len(lateness)-1])
		}
	})
}

// Every bad argument returns an error wrapping ErrInvalidArgument that
// names the problem, and changes nothing.
func TestDelayedOperationsBadInput(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		_, dq := open[order](t, rdb, name, delayed.WithoutTransfer())
		if _, err := dq.Offer(ctx, order{ID: "x"}, time.Hour, delayed.WithID("x")); err != nil {
			t.Fatal(err)
		}
		snap := rscSnapshot(t, rdb, name)
		long := strings.Repeat("i", delayed.MaxIDLen+1)
		type result struct {
			err  error
			want string // in the error's text
		}
		errOf := func(_ any, err error) error { return err }
		results := map[string]result{
			"Reschedule(-1ns)":          {dq.Reschedule(ctx, "x", -1), "negative"},
			"Reschedule(-1h)":           {dq.Reschedule(ctx, "x", -time.Hour), "negative"},
			"Reschedule(250 years)":     {dq.Reschedule(ctx, "x", 250*365*24*time.Hour), "out of range"},
			"RescheduleAt(zero)":        {dq.RescheduleAt(ctx, "x", time.Time{}), "out of range"},
			"RescheduleAt(1969)":        {dq.RescheduleAt(ctx, "x", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)), "out of range"},
			"RescheduleAt(2256)":        {dq.RescheduleAt(ctx, "x", time.Date(2256, 1, 1, 0, 0, 0, 0, time.UTC)), "out of range"},
			"RescheduleAt(2^53+1 µs)":   {dq.RescheduleAt(ctx, "x", time.UnixMicro(1<<53+1)), "out of range"},
			"Reschedule(\"\")":          {dq.Reschedule(ctx, "", time.Second), "empty id"},
			"RescheduleAt(\"\")":        {dq.RescheduleAt(ctx, "", time.Now().Add(time.Second)), "empty id"},
			"Promote(\"\")":             {dq.Promote(ctx, ""), "empty id"},
			"Update(\"\")":              {dq.Update(ctx, "", order{}), "empty id"},
			"Get(\"\")":                 {errOf(dq.Get(ctx, "")), "empty id"},
			"Contains(\"\")":            {errOf(dq.Contains(ctx, "")), "empty id"},
			"Remove(\"\")":              {errOf(dq.Remove(ctx, "")), "empty id"},
			"Reschedule(257 bytes)":     {dq.Reschedule(ctx, long, time.Second), "257 bytes"},
			"RescheduleAt(257 bytes)":   {dq.RescheduleAt(ctx, long, time.Now().Add(time.Second)), "257 bytes"},
			"Promote(257 bytes)":        {dq.Promote(ctx, long), "257 bytes"},
			"Update(257 bytes)":         {dq.Update(ctx, long, order{}), "257 bytes"},
			"Get(257 bytes)":            {errOf(dq.Get(ctx, long)), "257 bytes"},
			"Contains(257 bytes)":       {errOf(dq.Contains(ctx, long)), "257 bytes"},
			"Remove(257 bytes)":         {errOf(dq.Remove(ctx, long)), "257 bytes"},
			"List(-1, 10)":              {errOf(dq.List(ctx, -1, 10)), "offset -1"},
			"List(0, 0)":                {errOf(dq.List(ctx, 0, 0)), "limit 0"},
			"List(0, MaxPage+1)":        {errOf(dq.List(ctx, 0, delayed.MaxPage+1)), "limit 1001"},
			"Offer(\"\") (for context)": {errOf(dq.Offer(ctx, order{}, time.Second, delayed.WithID(""))), "empty id"},
		}
		for what, r := range results {
			if !errors.Is(r.err, delayed.ErrInvalidArgument) {
				t.Errorf("%s = %v, want ErrInvalidArgument", what, r.err)
				continue
			}
			if !strings.Contains(r.err.Error(), r.want) {
				t.Errorf("%s = %q, want it to name the problem (%q)", what, r.err, r.want)
			}
		}
		if after := rscSnapshot(t, rdb, name); after != snap {
			t.Fatalf("refused calls changed the queue:\nbefore:\n%s\nafter:\n%s", snap, after)
		}
		// The extremes that are allowed.
		if err := dq.RescheduleAt(ctx, "x", time.UnixMicro(1<<53)); err != nil {
			t.Fatalf("RescheduleAt(MaxDue) = %v", err)
		}
		if it, err := dq.Get(ctx, "x"); err != nil || it.DueAt.UnixMicro() != 1<<53 {
			t.Fatalf("Get after RescheduleAt(MaxDue) = %v, %v", it.DueAt.UnixMicro(), err)
		}
		if page, err := dq.List(ctx, 0, delayed.MaxPage); err != nil || len(page) != 1 {
			t.Fatalf("List(0, MaxPage) = %d items, %v", len(page), err)
		}
		if page, err := dq.List(ctx, 5, 1); err != nil || len(page) != 0 {
			t.Fatalf("List past the end = %d items, %v", len(page), err)
		}
	})
}

// IDs of any bytes work: binary, braces (the hash-tag characters),
// newlines, 256 bytes of 0xff.
func TestHostileIDs(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q, dq := open[string](t, rdb, name)
		ids := []string{
			"\x00\x01\x02\xfe\xff",
			"{", "}", "{" + name + "}", "{}", "a{b}c",
			"line\nbreak\r\n",
			strings.Repeat("\xff", delayed.MaxIDLen),
			strings.Repeat("\x00", delayed.MaxIDLen),
			"\x00",
			" ",
			"*?[]",
			"redelay:{x}:items",
		}
		for i, id := range ids {
			if _, err := dq.Offer(ctx, fmt.Sprintf("v%d", i), time.Hour+time.Duration(i)*time.Minute, delayed.WithID(id)); err != nil {
				t.Fatalf("Offer(%q): %v", id, err)
			}
		}
		for i, id := range ids {
			if _, err := dq.Offer(ctx, "dup", time.Hour, delayed.WithID(id)); !errors.Is(err, delayed.ErrDuplicate) {
				t.Errorf("second Offer(%q) = %v, want ErrDuplicate", id, err)
			}
			it, err := dq.Get(ctx, id)
			if err != nil || it.ID != id || it.Value != fmt.Sprintf("v%d", i) {
				t.Errorf("Get(%q) = %+v, %v", id, it, err)
			}
			if ok, err := dq.Contains(ctx, id); err != nil || !ok {
				t.Errorf("Contains(%q) = %v, %v", id, ok, err)
			}
			at := time.Now().Add(3 * time.Hour).Add(time.Duration(i) * time.Second).Truncate(time.Microsecond)
			if err := dq.RescheduleAt(ctx, id, at); err != nil {
				t.Errorf("RescheduleAt(%q): %v", id, err)
			}
			if err := dq.Update(ctx, id, fmt.Sprintf("u%d", i)); err != nil {
				t.Errorf("Update(%q): %v", id, err)
			}
			if it, err := dq.Get(ctx, id); err != nil || !it.DueAt.Equal(at) || it.Value != fmt.Sprintf("u%d", i) {
				t.Errorf("Get(%q) after RescheduleAt and Update = %+v, %v", id, it, err)
			}
		}
		page, err := dq.List(ctx, 0, 100)
		if err != nil || len(page) != len(ids) {
			t.Fatalf("List = %d items, %v; want %d", len(page), err, len(ids))
		}
		for i, it := range page {
			if it.ID != ids[i] {
				t.Errorf("List[%d] = %q, want %q (due order)", i, it.ID, ids[i])
			}
		}
		// One of them all the way through a delivery, the rest removed.
		if err := dq.Promote(ctx, ids[0]); err != nil {
			t.Fatal(err)
		}
		d, _ := rscReceive(t, q, 5*time.Second)
		if d.ID != ids[0] || d.Value != "u0" {
			t.Fatalf("delivered %q = %q, want %q", d.ID, d.Value, ids[0])
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		for _, id := range ids[1:] {
			if ok, err := dq.Remove(ctx, id); err != nil || !ok {
				t.Errorf("Remove(%q) = %v, %v", id, ok, err)
			}
			if ok, err := dq.Contains(ctx, id); err != nil || ok {
				t.Errorf("Contains(%q) after Remove = %v, %v", id, ok, err)
			}
		}
		if n, err := dq.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size after removing all = %d, %v", n, err)
		}
	})
}

// rscRaw reads the stored value of a pending item (seq prefix + envelope)
// and its score.
func rscRaw(t *testing.T, rdb redis.UniversalClient, name, id string) (string, float64) {
	t.Helper()
	ctx := context.Background()
	k := redistest.KeysOf(name)
	v, err := rdb.HGet(ctx, k.Items, id).Result()
	if err != nil {
		t.Fatal(err)
	}
	score, err := rdb.ZScore(ctx, k.Delayed, v[:lua.SeqLen]+id).Result()
	if err != nil {
		t.Fatal(err)
	}
	return v, score
}

// An item whose stored envelope is of a newer version than this release
// writes (a newer producer during a rolling upgrade): Update refuses it
// with an error (no panic, nothing changed); Get reports the version;
// List leaves it out; Reschedule and Promote, which only rewrite the due
// time in the prefix every version shares, keep everything else byte for
// byte.
func TestNewerEnvelopeVersion(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		_, dq := open[order](t, rdb, name)
		if _, err := dq.Offer(ctx, order{ID: "fut", Total: 1}, time.Hour, delayed.WithID("fut"),
			delayed.WithHeaders(map[string]string{"k": "v"})); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, order{ID: "now", Total: 2}, 2*time.Hour, delayed.WithID("now")); err != nil {
			t.Fatal(err)
		}
		raw, _ := rscRaw(t, rdb, name, "fut")
		b := []byte(raw)
		b[lua.SeqLen] = envelope.Version + 1 // the same layout, a newer version byte
		if err := rdb.HSet(ctx, redistest.KeysOf(name).Items, "fut", b).Err(); err != nil {
			t.Fatal(err)
		}
		snap := rscSnapshot(t, rdb, name)

		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("Update panicked: %v", r)
				}
			}()
			err = dq.Update(ctx, "fut", order{ID: "fut", Total: 99})
		}()
		if err == nil || errors.Is(err, delayed.ErrNotFound) {
			t.Fatalf("Update of a newer envelope = %v, want an error", err)
		}
		if !strings.Contains(err.Error(), "version") {
			t.Errorf("Update error %q does not say why", err)
		}
		if after := rscSnapshot(t, rdb, name); after != snap {
			t.Fatalf("a refused Update changed the queue:\nbefore:\n%s\nafter:\n%s", snap, after)
		}
		if _, err := dq.Get(ctx, "fut"); !errors.Is(err, envelope.ErrUnknownVersion) {
			t.Errorf("Get of a newer envelope = %v, want ErrUnknownVersion", err)
		}
		if ok, err := dq.Contains(ctx, "fut"); err != nil || !ok {
			t.Errorf("Contains = %v, %v", ok, err)
		}
		if page, err := dq.List(ctx, 0, 10); err != nil || len(page) != 1 || page[0].ID != "now" {
			t.Errorf("List = %+v, %v; want the newer envelope left out", page, err)
		}

		at := time.Now().Add(5 * time.Hour).Truncate(time.Microsecond)
		if err := dq.RescheduleAt(ctx, "fut", at); err != nil {
			t.Fatalf("RescheduleAt of a newer envelope: %v", err)
		}
		raw2, score := rscRaw(t, rdb, name, "fut")
		if int64(score) != at.UnixMicro() {
			t.Errorf("score %v, want %d", score, at.UnixMicro())
		}
		// Only the due time (bytes 9..16 of the envelope) changed.
		env1, env2 := string(b[lua.SeqLen:]), raw2[lua.SeqLen:]
		if raw2[:lua.SeqLen] != string(b[:lua.SeqLen]) || env1[:9] != env2[:9] || env1[17:] != env2[17:] {
			t.Errorf("Reschedule changed more than the due time:\n%q\n%q", env1, env2)
		}
		if id, err := envelope.PeekID([]byte(env2)); err != nil || id != "fut" {
			t.Errorf("PeekID after Reschedule = %q, %v", id, err)
		}
		if err := dq.Promote(ctx, "fut"); err != nil {
			t.Fatalf("Promote of a newer envelope: %v", err)
		}
		ready, err := rdb.LRange(ctx, redistest.KeysOf(name).Ready, 0, -1).Result()
		if err != nil || len(ready) != 1 {
			t.Fatalf("ready = %q, %v", ready, err)
		}
		if ready[0][0] != envelope.Version+1 || ready[0][:9] != env1[:9] || ready[0][17:] != env1[17:] {
			t.Errorf("Promote changed more than the due time:\n%q\n%q", env1, ready[0])
		}
	})
}

// Update rewrites only the payload of a version-2 envelope: its
// extension fields (not counted in the payload limit), headers, times and
// place stay. A corrupt envelope is
// refused, nothing changed. A value over the payload limit is refused,
// nothing changed.
func TestUpdateKeepsExtensionsAndRefusesBadEnvelopes(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[order](rdb, name, blocking.WithMaxPayloadSize(200))
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		k := redistest.KeysOf(name)
		put := func(id string, env []byte, seq string, due time.Time) {
			t.Helper()
			if err := rdb.HSet(ctx, k.Items, id, seq+string(env)).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.ZAdd(ctx, k.Delayed, redis.Z{Score: float64(due.UnixMicro()), Member: seq + id}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		payload, err := codec.Msgpack().Marshal(order{ID: "ext", Total: 1})
		if err != nil {
			t.Fatal(err)
		}
		due := time.Now().Add(time.Hour).Truncate(time.Millisecond)
		e := envelope.Envelope{
			ID: "ext", EnqueuedAt: time.Now().Truncate(time.Millisecond), DueAt: due, Attempt: 0,
			Headers: map[string]string{"a": "1", "b": strings.Repeat("x", 150)},
			Ext:     map[uint64][]byte{7: []byte("seven"), 300: {}, 1 << 40: []byte(strings.Repeat("y", 130))},
			Payload: payload,
		}
		put("ext", e.Marshal(), "\x00\x00\x00\x00\x10\x00", due)
		if err := dq.Update(ctx, "ext", order{ID: "ext", Total: 2}); err != nil {
			t.Fatal(err)
		}
		raw, score := rscRaw(t, rdb, name, "ext")
		if raw[:lua.SeqLen] != "\x00\x00\x00\x00\x10\x00" || int64(score) != due.UnixMicro() {
			t.Errorf("Update moved the item: seq %q, score %v", raw[:lua.SeqLen], score)
		}
		got, err := envelope.Unmarshal([]byte(raw[lua.SeqLen:]))
		if err != nil {
			t.Fatal(err)
		}
		var v order
		if err := codec.Msgpack().Unmarshal(got.Payload, &v); err != nil || v.Total != 2 {
			t.Errorf("payload after Update = %+v, %v", v, err)
		}
		if got.Version() != 2 || len(got.Ext) != 3 || string(got.Ext[7]) != "seven" || len(got.Ext[300]) != 0 ||
			string(got.Ext[1<<40]) != strings.Repeat("y", 130) {
			t.Errorf("extensions after Update = %v (version %d), want them kept", got.Ext, got.Version())
		}
		if got.ID != "ext" || len(got.Headers) != 2 || got.Headers["a"] != "1" || !got.DueAt.Equal(due) || !got.EnqueuedAt.Equal(e.EnqueuedAt) {
			t.Errorf("envelope after Update = %+v", got)
		}
		if it, err := dq.Get(ctx, "ext"); err != nil || it.Value.Total != 2 || it.Headers["a"] != "1" {
			t.Errorf("Get after Update = %+v, %v", it, err)
		}

		// Corrupt envelopes: Update refuses them and changes nothing.
		good := (&envelope.Envelope{ID: "bad", Headers: map[string]string{"h": "v"}, Payload: payload}).Marshal()
		corrupt := map[string][]byte{
			"id length past the end":    append(append([]byte{}, good[:envelope.HeaderLen]...), 0x7f, 'b'),
			"header count past the end": append(append([]byte{}, good[:envelope.HeaderLen]...), 3, 'b', 'a', 'd', 5, 1, 'k'),
			"not an envelope":           []byte("garbage that is not an envelope"),
			"v2 ext past the end":       append(append([]byte{2}, good[1:envelope.HeaderLen]...), 3, 'b', 'a', 'd', 0, 2, 7, 100, 'z'),
		}
		for what, env := range corrupt {
			id := "bad"
			if err := rdb.Del(ctx, k.Items, k.Delayed).Err(); err != nil {
				t.Fatal(err)
			}
			put(id, env, "\x00\x00\x00\x00\x00\x01", due)
			snap := rscSnapshot(t, rdb, name)
			err := dq.Update(ctx, id, order{Total: 3})
			if err == nil || errors.Is(err, delayed.ErrNotFound) {
				t.Errorf("Update of an envelope with %s = %v, want an error", what, err)
			}
			if after := rscSnapshot(t, rdb, name); after != snap {
				t.Errorf("a refused Update (%s) changed the queue:\nbefore:\n%s\nafter:\n%s", what, snap, after)
			}
		}

		// A value over the limit: ErrPayloadTooLarge, nothing changed.
		if err := rdb.Del(ctx, k.Items, k.Delayed).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, order{ID: "small"}, time.Hour, delayed.WithID("small")); err != nil {
			t.Fatal(err)
		}
		snap := rscSnapshot(t, rdb, name)
		if err := dq.Update(ctx, "small", order{ID: strings.Repeat("z", 300)}); !errors.Is(err, blocking.ErrPayloadTooLarge) {
			t.Errorf("Update over the limit = %v, want ErrPayloadTooLarge", err)
		}
		if after := rscSnapshot(t, rdb, name); after != snap {
			t.Errorf("a refused Update changed the queue")
		}
	})
}

// Items rescheduled to the same due time keep their offer order, whatever
// order the reschedules ran in: in List and in delivery.
func TestRescheduleKeepsOfferOrderOnTies(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const n = 20
		// The reschedules and List must run before at, while no transfer
		// can move the items. When List is wrong and at has passed (a
		// loaded machine stalled), start again on a new queue with a
		// longer lead; before at, a wrong List is the library's fault.
		var (
			q  *blocking.Queue[int]
			dq *delayed.Queue[int]
			at time.Time
		)
		for lead := 700 * time.Millisecond; ; lead *= 2 {
			q, dq = open[int](t, rdb, redistest.QueueName(t))
			for i := range n {
				// Offered in order 0..n-1, due in the reverse order.
				if _, err := dq.Offer(ctx, i, time.Hour+time.Duration(n-i)*time.Minute, delayed.WithID(fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			at = time.Now().Add(lead).Truncate(time.Microsecond)
			for _, i := range rand.Perm(n) {
				if err := dq.RescheduleAt(ctx, fmt.Sprint(i), at); err != nil {
					t.Fatal(err)
				}
			}
			page, err := dq.List(ctx, 0, n)
			fail := ""
			if err != nil || len(page) != n {
				fail = fmt.Sprintf("List = %d, %v", len(page), err)
			} else {
				for i, it := range page {
					if it.Value != i || !it.DueAt.Equal(at) {
						fail = fmt.Sprintf("List[%d] = %d due %v; want offer order at %v", i, it.Value, it.DueAt, at)
						break
					}
				}
			}
			if fail == "" {
				break
			}
			if time.Now().Before(at) || lead >= 5*time.Second {
				t.Fatal(fail)
			}
			t.Logf("%s, but the due time %v had passed: trying again with a lead of %v", fail, at, 2*lead)
		}
		for i := range n {
			v, err := q.Take(ctx)
			if err != nil || v != i {
				t.Fatalf("Take #%d = %d, %v; want offer order", i, v, err)
			}
		}
		if time.Now().Before(at) {
			t.Fatal("delivered before the due time")
		}
	})
}

// Offer counts the producer's headers toward the queue's max payload size
// (blocking.WithHeaders: "their bytes count toward the max payload
// size"); Update must hold the item to the same limit, or an item too
// large to offer can be made by offering it small and updating it.
func TestUpdatePayloadLimitCountsHeaders(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name, blocking.WithMaxPayloadSize(200))
	dq := delayed.New(q, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
	headers := map[string]string{"h": strings.Repeat("x", 150)}
	big := strings.Repeat("v", 100) // 101+ bytes encoded: with the headers, over 200
	if _, err := dq.Offer(ctx, big, time.Hour, delayed.WithHeaders(headers)); !errors.Is(err, blocking.ErrPayloadTooLarge) {
		t.Fatalf("Offer of a value whose headers take it over the limit = %v, want ErrPayloadTooLarge", err)
	}
	if _, err := dq.Offer(ctx, "small", time.Hour, delayed.WithID("x"), delayed.WithHeaders(headers)); err != nil {
		t.Fatal(err)
	}
	snap := rscSnapshot(t, rdb, name)
	err := dq.Update(ctx, "x", big)
	if !errors.Is(err, blocking.ErrPayloadTooLarge) {
		it, _ := dq.Get(ctx, "x")
		t.Errorf("Update to a value Offer refuses with these headers = %v, want ErrPayloadTooLarge; "+
			"the stored item now holds %d value bytes + %d header bytes, over the 200-byte limit",
			err, len(it.Value), len("h")+len(it.Headers["h"]))
	}
	if after := rscSnapshot(t, rdb, name); after != snap && err != nil {
		t.Errorf("a refused Update changed the queue")
	}
}

// A zero delay (or a due time in the past) makes an item ready "after any
// item already due": it does not overtake a pending item whose due time
// has passed but which no transfer has moved yet. Promote makes it ready
// at once, behind the items already ready only.
func TestRescheduleNowAfterItemsAlreadyDue(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		// a must be pending when it falls due. An offer that reaches Redis
		// after its due time makes the item ready at once (nothing pending
		// is due before it), which a loaded machine can do to a short lead:
		// then the test starts again on a new queue with a longer one.
		var (
			q    *blocking.Queue[string]
			dq   *delayed.Queue[string]
			aDue time.Time
		)
		for lead := 50 * time.Millisecond; ; lead *= 2 {
			// No transfer runs until the consumer's first call.
			bq := blocking.New[string](rdb, redistest.QueueName(t))
			q, dq = bq, delayed.New(bq, delayed.WithoutTransfer())
			closeDQ := dq.Close
			t.Cleanup(func() { _ = closeDQ(); _ = bq.Close() })
			aDue = time.Now().Add(lead)
			if _, err := dq.OfferAt(ctx, "a", aDue, delayed.WithID("a")); err != nil {
				t.Fatal(err)
			}
			n, err := q.Size(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			if lead >= 5*time.Second {
				t.Fatalf("a was ready at once with a lead of %v", lead)
			}
		}
		for _, id := range []string{"b", "c", "d"} {
			if _, err := dq.Offer(ctx, id, time.Hour, delayed.WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Until(aDue) + 50*time.Millisecond) // a is due, still pending
		if err := dq.Reschedule(ctx, "b", 0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond) // c's past due time after b's
		if err := dq.RescheduleAt(ctx, "c", time.Now().Add(-time.Millisecond), delayed.AllowPast()); err != nil {
			t.Fatal(err)
		}
		if n, _ := q.Size(ctx); n != 0 {
			t.Fatalf("%d ready: an item overtook a due item still pending", n)
		}
		// Earlier than a's due time: ready at once, ahead of a.
		if err := dq.RescheduleAt(ctx, "d", aDue.Add(-time.Second), delayed.AllowPast()); err != nil {
			t.Fatal(err)
		}
		if n, _ := q.Size(ctx); n != 1 {
			t.Fatalf("%d ready after rescheduling d before a's due time, want 1", n)
		}
		if _, err := dq.Offer(ctx, "e", time.Hour, delayed.WithID("e")); err != nil {
			t.Fatal(err)
		}
		if err := dq.Promote(ctx, "e"); err != nil {
			t.Fatal(err)
		}
		peek, err := q.Peek(ctx, 10)
		if err != nil || len(peek) != 2 || peek[0].ID != "d" || peek[1].ID != "e" {
			t.Fatalf("Peek = %+v, %v; want d then e", peek, err)
		}
		for _, want := range []string{"d", "e", "a", "b", "c"} {
			v, ok, err := q.Poll(ctx, 5*time.Second)
			if err != nil || !ok || v != want {
				t.Fatalf("Poll = %q, %v, %v; want %q", v, ok, err, want)
			}
		}
	})
}

// Any offset that is not negative is valid: past the end, the page is
// empty. (Huge offsets reach Redis as floats in exponent form from the
// script's arithmetic, and ZRANGE refuses them.)
func TestListHugeOffsetIsEmptyPage(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	_, dq := open[int](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
	if _, err := dq.Offer(ctx, 1, time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, off := range []int{1 << 40, 1 << 53, 1e17, math.MaxInt - delayed.MaxPage} {
		if page, err := dq.List(ctx, off, 10); err != nil || len(page) != 0 {
			t.Errorf("List(%d, 10) = %d items, %v; want an empty page", off, len(page), err)
		}
	}
}

// RescheduleAt refuses a due time that has passed (a mistyped year would
// make the item ready at once, with a latency of years), naming it and
// Promote; AllowPast asks for it, and the item is ready at once.
func TestRescheduleAtPastRefused(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		if _, err := dq.Offer(ctx, "v", time.Hour, delayed.WithID("a")); err != nil {
			t.Fatal(err)
		}
		past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
		err := dq.RescheduleAt(ctx, "a", past)
		if !errors.Is(err, delayed.ErrInvalidArgument) || !strings.Contains(err.Error(), "2020-01-01T00:00:00Z has passed") ||
			!strings.Contains(err.Error(), "Promote") {
			t.Fatalf("RescheduleAt(2020) = %v; want ErrInvalidArgument saying it has passed", err)
		}
		if ok, err := dq.Contains(ctx, "a"); err != nil || !ok {
			t.Fatalf("after a refused reschedule: pending %v, %v", ok, err)
		}
		// Now, by a clock a little behind: not refused.
		if err := dq.RescheduleAt(ctx, "a", time.Now().Add(-100*time.Millisecond)); err != nil {
			t.Fatalf("RescheduleAt(100 ms ago) = %v", err)
		}
		if _, err := dq.Offer(ctx, "w", time.Hour, delayed.WithID("b")); err != nil {
			t.Fatal(err)
		}
		if err := dq.RescheduleAt(ctx, "b", past, delayed.AllowPast()); err != nil {
			t.Fatalf("RescheduleAt(2020, AllowPast) = %v", err)
		}
		got := map[string]bool{}
		for range 2 {
			v, ok, err := q.Poll(ctx, 5*time.Second)
			if err != nil || !ok {
				t.Fatalf("Poll = %q, %v, %v", v, ok, err)
			}
			got[v] = true
		}
		if !got["v"] || !got["w"] {
			t.Fatalf("taken %v; want v and w", got)
		}
	})
}
