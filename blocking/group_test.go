package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// This file proves groups (WithGroup): fair share across groups for
// Take, Receive and Consume; order within a group; WithGroupConcurrency
// across consumers, with settles, retries and expired leases freeing the
// slot; WithGroupRateLimit; Groups, PauseGroup, ResumeGroup, PurgeGroup;
// the counts of Stats and Size; bad keys.

// groupOf returns the group of a value "group/n".
func groupOf(v string) string { return v[:strings.IndexByte(v, '/')] }

// offerGroups offers n items to each group, all of one group before the
// next ("g/0", "g/1", ...).
func offerGroups(t *testing.T, q *blocking.Queue[string], n int, groups ...string) {
	t.Helper()
	ctx := context.Background()
	for _, g := range groups {
		for i := range n {
			if _, err := q.Offer(ctx, fmt.Sprintf("%s/%d", g, i), blocking.WithGroup(g)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// drainBy takes n items by mode and returns them in delivery order.
func drainBy(t *testing.T, q *blocking.Queue[string], mode string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
			vs, err := q.TakeBatch(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, vs...)
		case "Receive":
			d, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, d.Value)
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		case "ReceiveBatch":
			ds, err := q.ReceiveBatch(ctx, 7)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				got = append(got, d.Value)
				if err := d.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return got
}

// checkOrderWithin fails when the items of a group came out of order.
func checkOrderWithin(t *testing.T, got []string) {
	t.Helper()
	next := map[string]int{}
	for _, v := range got {
		g := groupOf(v)
		if want := fmt.Sprintf("%s/%d", g, next[g]); v != want {
			t.Fatalf("group %s: got %s, want %s (order within a group)", g, v, want)
		}
		next[g]++
	}
}

func TestGroupFairShare(t *testing.T) {
	t.Parallel()
	const big, small, groups = 300, 10, 10
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for _, mode := range []string{"Take", "TakeBatch", "Receive", "ReceiveBatch"} {
			t.Run(mode, func(t *testing.T) {
				name := redistest.QueueName(t)
				q := blocking.New[string](rdb, name)
				t.Cleanup(func() { _ = q.Close() })
				offerGroups(t, q, big, "big")
				var smalls []string
				for i := range groups {
					smalls = append(smalls, fmt.Sprintf("small%02d", i))
				}
				offerGroups(t, q, small, smalls...)
				total := big + small*groups
				if st, err := q.Stats(ctx); err != nil || st.Ready != int64(total) {
					t.Fatalf("Stats = %+v, %v; want Ready %d", st, err, total)
				}
				if n, err := q.Size(ctx); err != nil || n != int64(total) {
					t.Fatalf("Size = %d, %v; want %d", n, err, total)
				}
				gs, err := q.Groups(ctx, 0, 3)
				if err != nil || len(gs) != 3 || gs[0] != (blocking.GroupInfo{Key: "big", Ready: big}) || gs[1].Ready != small {
					t.Fatalf("Groups = %+v, %v", gs, err)
				}
				// Peek lists the items held in groups, group by group.
				peek, err := q.Peek(ctx, 3)
				if err != nil || len(peek) != 3 || peek[0].Group != "big" || peek[0].Value != "big/0" || peek[2].Value != "big/2" {
					t.Fatalf("Peek = %+v, %v", peek, err)
				}
				got := drainBy(t, q, mode, total)
				checkOrderWithin(t, got)
				// The bound of the contract: every item of the small groups
				// within (groups × small) × 2 deliveries, not after the
				// big group's backlog.
				lastSmall := 0
				for i, v := range got {
					if groupOf(v) != "big" {
						lastSmall = i + 1
					}
				}
				if lastSmall > groups*small*2 {
					t.Fatalf("the last item of a small group came %d-th, want within %d", lastSmall, groups*small*2)
				}
				if st, err := q.Stats(ctx); err != nil || st.Ready != 0 || st.Inflight != 0 {
					t.Fatalf("Stats after = %+v, %v", st, err)
				}
				if gs, err := q.Groups(ctx, 0, 10); err != nil || len(gs) != 0 {
					t.Fatalf("Groups after = %+v, %v", gs, err)
				}
				// Nothing is left behind by the empty groups.
				if ks := groupKeys(t, rdb, name); len(ks) != 0 {
					t.Fatalf("keys left behind by empty groups: %v", ks)
				}
			})
		}
	})
}

// groupKeys lists the keys of the groups of queue name that hold anything
// (the per-group sets and the round's bookkeeping).
func groupKeys(t *testing.T, rdb redis.UniversalClient, name string) []string {
	t.Helper()
	ctx := context.Background()
	k := redistest.KeysOf(name)
	var out []string
	for _, key := range []string{k.GTurn, k.GSize, k.GFlight, k.GTok, k.GWait, k.GroupItems("big"), k.GroupItems("")} {
		if n, err := rdb.Exists(ctx, key).Result(); err != nil {
			t.Fatal(err)
		} else if n == 1 {
			out = append(out, key)
		}
	}
	return out
}

func TestGroupUngroupedTakeTheirTurn(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t))
	t.Cleanup(func() { _ = q.Close() })
	offerGroups(t, q, 1, "a")
	// Once the queue has had a grouped item, items without a group are
	// the group "" of their own: 100 of them do not hold back group b.
	for i := range 100 {
		if _, err := q.Offer(ctx, fmt.Sprintf("/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	offerGroups(t, q, 3, "b")
	// The latency reads the groups' first items: it grows while they wait.
	time.Sleep(20 * time.Millisecond)
	if st, err := q.Stats(ctx); err != nil || st.Latency < 20*time.Millisecond {
		t.Fatalf("Stats = %+v, %v; want a latency of the items waiting in groups", st, err)
	}
	got := drainBy(t, q, "Take", 104)
	checkOrderWithin(t, got)
	pos := map[string]int{}
	for i, v := range got {
		pos[v] = i
	}
	if pos["b/2"] > 8 {
		t.Fatalf("b/2 came %d-th: %v", pos["b/2"]+1, got[:10])
	}
	gs, err := q.Groups(ctx, 0, 10)
	if err != nil || len(gs) != 0 {
		t.Fatalf("Groups = %+v, %v", gs, err)
	}
}

func TestGroupConcurrencyAcrossConsumers(t *testing.T) {
	t.Parallel()
	const groups, per = 6, 15
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		prod := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = prod.Close() })
		var gs []string
		for i := range groups {
			gs = append(gs, fmt.Sprintf("tenant%d", i))
		}
		offerGroups(t, prod, per, gs...)

		var mu sync.Mutex
		inFlight := map[string]int{}
		got := map[string][]string{}
		var over atomic.Int32
		var failedOnce sync.Map
		done := make(chan struct{})
		var handled atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var wg sync.WaitGroup
		for c := range 3 {
			q := blocking.New[string](redistest.NewClientLike(t, rdb), name, blocking.WithVisibilityTimeout(time.Second))
			t.Cleanup(func() { _ = q.Close() })
			wg.Go(func() {
				_ = q.Consume(ctx, func(ctx context.Context, d *blocking.Delivery[string]) error {
					g := groupOf(d.Value)
					mu.Lock()
					inFlight[g]++
					if inFlight[g] > 1 {
						over.Add(1)
					}
					mu.Unlock()
					time.Sleep(time.Millisecond)
					mu.Lock()
					inFlight[g]--
					mu.Unlock()
					// Every fifth item of consumer 0 fails once: a retry
					// goes back to its group and holds its slot meanwhile.
					if c == 0 && d.Attempt == 1 && strings.HasSuffix(d.Value, "5") {
						if _, loaded := failedOnce.LoadOrStore(d.Value, true); !loaded {
							return errors.New("once")
						}
					}
					mu.Lock()
					got[g] = append(got[g], d.Value)
					mu.Unlock()
					if handled.Add(1) == groups*per {
						close(done)
					}
					return nil
				}, blocking.WithConcurrency(8), blocking.WithGroupConcurrency(1), blocking.WithBackoff(func(int) time.Duration { return 0 }))
			})
		}
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("handled %d of %d", handled.Load(), groups*per)
		}
		cancel()
		wg.Wait()
		if n := over.Load(); n > 0 {
			t.Fatalf("%d times a group had two items in flight, limit 1", n)
		}
		for _, g := range gs {
			if len(got[g]) != per {
				t.Fatalf("group %s: %d handled, want %d: %v", g, len(got[g]), per, got[g])
			}
		}
		if st, err := prod.Stats(context.Background()); err != nil || st.Ready+st.Inflight+st.Retry != 0 {
			t.Fatalf("Stats = %+v, %v", st, err)
		}
	})
}

func TestGroupConcurrencyStrictOrder(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(300*time.Millisecond))
		t.Cleanup(func() { _ = q.Close() })
		// A Consume records the limit for every process as it starts; then
		// Receive obeys it.
		recordGroupLimit(t, rdb, name, blocking.WithGroupConcurrency(1))
		offerGroups(t, q, 3, "a", "b")

		ds, err := q.ReceiveBatch(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || groupOf(ds[0].Value) == groupOf(ds[1].Value) {
			t.Fatalf("ReceiveBatch = %v, want one item of each group", values(ds))
		}
		gs, err := q.Groups(ctx, 0, 10)
		if err != nil || len(gs) != 2 || gs[0].InFlight != 1 || gs[0].Ready != 2 {
			t.Fatalf("Groups = %+v, %v", gs, err)
		}
		// Nothing more while both slots are held: a receive waits.
		sctx, scancel := context.WithTimeout(ctx, 200*time.Millisecond)
		more, err := q.ReceiveBatch(sctx, 10)
		scancel()
		if !errors.Is(err, context.DeadlineExceeded) || len(more) != 0 {
			t.Fatalf("ReceiveBatch with both slots held = %v, %v", values(more), err)
		}
		// a/0 is acked: a/1 comes next. b/0's lease expires: b/0 again,
		// before b/1.
		var a0 *blocking.Delivery[string]
		for _, d := range ds {
			if groupOf(d.Value) == "a" {
				a0 = d
			}
		}
		if a0 == nil || a0.Value != "a/0" {
			t.Fatalf("ReceiveBatch = %v", values(ds))
		}
		if err := a0.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		seen := map[string]int{}
		var order []string
		for len(order) < 5 {
			d, err := q.Receive(wctx)
			if err != nil {
				t.Fatalf("Receive after %v: %v", order, err)
			}
			order = append(order, d.Value)
			seen[groupOf(d.Value)]++
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var a, b []string
		for _, v := range order {
			if groupOf(v) == "a" {
				a = append(a, v)
			} else {
				b = append(b, v)
			}
		}
		if strings.Join(a, ",") != "a/1,a/2" || strings.Join(b, ",") != "b/0,b/1,b/2" {
			t.Fatalf("order = %v", order)
		}
	})
}

// recordGroupLimit runs a Consume of queue name with opts on an empty
// queue until its limits are recorded in Redis, then stops it.
func recordGroupLimit(t *testing.T, rdb redis.UniversalClient, name string, opts ...blocking.ConsumeOption) {
	t.Helper()
	q := blocking.New[string](rdb, name)
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(context.Context, *blocking.Delivery[string]) error { return nil }, opts...)
	}()
	redistest.WaitFor(t, 10*time.Second, "the group limit to be recorded", func() bool {
		n, _ := rdb.HExists(context.Background(), redistest.KeysOf(name).Meta, "group_limit").Result()
		return n
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume = %v", err)
	}
}

func values(ds []*blocking.Delivery[string]) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Value
	}
	return out
}

func TestGroupRateLimit(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	offerGroups(t, q, 4, "slow")
	offerGroups(t, q, 20, "free")
	const every = 150 * time.Millisecond
	var mu sync.Mutex
	starts := map[string][]time.Time{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var n atomic.Int32
	go func() {
		_ = q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			mu.Lock()
			starts[groupOf(d.Value)] = append(starts[groupOf(d.Value)], time.Now())
			mu.Unlock()
			if n.Add(1) == 24 {
				close(done)
			}
			return nil
		}, blocking.WithConcurrency(4), blocking.WithGroupRateLimit(1, every))
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("handled %d of 24", n.Load())
	}
	cancel()
	mu.Lock()
	defer mu.Unlock()
	for g, ts := range starts {
		// Lower bounds only. The starts are spaced in Redis; a handler
		// here starts after its lease by a delay that load can stretch for
		// one item and not the next, so a gap seen here may be shorter
		// than the interval by that much (not by a third of it), and the
		// span of the group's starts by at most one interval.
		for i := 1; i < len(ts); i++ {
			if gap := ts[i].Sub(ts[i-1]); gap < every/3 {
				t.Fatalf("group %s: starts %v apart, limit one per %v", g, gap, every)
			}
		}
		if span, want := ts[len(ts)-1].Sub(ts[0]), time.Duration(len(ts)-2)*every; span < want {
			t.Fatalf("group %s: %d starts in %v, limit one per %v", g, len(ts), span, every)
		}
	}
}

func TestGroupPauseResumePurge(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		offerGroups(t, q, 3, "a", "b", "c")
		if err := q.PauseGroup(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		got := drainBy(t, q, "Take", 6)
		for _, v := range got {
			if groupOf(v) == "a" {
				t.Fatalf("took %s of a paused group: %v", v, got)
			}
		}
		if v, ok, err := q.Poll(ctx, 50*time.Millisecond); err != nil || ok {
			t.Fatalf("Poll = %q, %v, %v; want nothing while a is paused", v, ok, err)
		}
		gs, err := q.Groups(ctx, 0, 10)
		if err != nil || len(gs) != 1 || gs[0] != (blocking.GroupInfo{Key: "a", Ready: 3, Paused: true}) {
			t.Fatalf("Groups = %+v, %v", gs, err)
		}
		// A blocked consumer wakes when the group resumes.
		took := make(chan string, 1)
		go func() {
			v, _ := q.Take(ctx)
			took <- v
		}()
		time.Sleep(50 * time.Millisecond)
		if err := q.ResumeGroup(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		select {
		case v := <-took:
			if v != "a/0" {
				t.Fatalf("took %s after resume, want a/0", v)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a blocked Take did not wake when the group resumed")
		}
		if n, err := q.PurgeGroup(ctx, "a"); err != nil || n != 2 {
			t.Fatalf("PurgeGroup = %d, %v; want 2", n, err)
		}
		if n, err := q.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size = %d, %v", n, err)
		}
		offerGroups(t, q, 1, "z")
		if got := drainBy(t, q, "Take", 1); got[0] != "z/0" {
			t.Fatalf("took %v", got)
		}
	})
}

func TestGroupBadKeys(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t))
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close() })
	for _, key := range []string{"", strings.Repeat("k", blocking.MaxGroupLen+1), "bad\xff"} {
		if _, err := q.Offer(ctx, "v", blocking.WithGroup(key)); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Fatalf("Offer with group %q: %v, want ErrInvalidArgument", key, err)
		}
		if _, err := dq.Offer(ctx, "v", time.Second, delayed.WithGroup(key)); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Fatalf("delayed Offer with group %q: %v, want ErrInvalidArgument", key, err)
		}
		if err := q.PauseGroup(ctx, key); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Fatalf("PauseGroup(%q): %v", key, err)
		}
	}
	if _, err := q.Groups(ctx, -1, 1); !errors.Is(err, blocking.ErrInvalidArgument) {
		t.Fatalf("Groups(-1): %v", err)
	}
	// A hostile key is only a key.
	hostile := "a:{b}\x00\x01 ' -- " + strings.Repeat("é", 20)
	if _, err := q.Offer(ctx, hostile+"/0", blocking.WithGroup(hostile)); err != nil {
		t.Fatal(err)
	}
	if v, err := q.Take(ctx); err != nil || v != hostile+"/0" {
		t.Fatalf("Take = %q, %v", v, err)
	}
	if err := q.Consume(ctx, func(context.Context, *blocking.Delivery[string]) error { return nil }, blocking.WithGroupConcurrency(0)); !errors.Is(err, blocking.ErrInvalidArgument) {
		t.Fatalf("WithGroupConcurrency(0): %v", err)
	}
}

func TestGroupDelayedJoinsWhenDue(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close() })
		offerGroups(t, q, 50, "big")
		for i := range 3 {
			if _, err := dq.Offer(ctx, fmt.Sprintf("late/%d", i), 100*time.Millisecond, delayed.WithGroup("late")); err != nil {
				t.Fatal(err)
			}
		}
		// All three: the transfer may move them in more than one pass on a
		// busy machine, and a later one joins a round already under way.
		redistest.WaitFor(t, 10*time.Second, "the delayed items to join their group", func() bool {
			gs, err := q.Groups(ctx, 0, 10)
			if err != nil {
				return false
			}
			for _, g := range gs {
				if g.Key == "late" && g.Ready == 3 {
					return true
				}
			}
			return false
		})
		got := drainBy(t, q, "Take", 53)
		checkOrderWithin(t, got)
		for i, v := range got {
			if v == "late/2" && i > 8 {
				t.Fatalf("late/2 came %d-th", i+1)
			}
		}
	})
}

// On a queue of several partitions a group lives in its key's partition:
// an ID given with WithID that maps to another partition is still found
// by every operation by ID, and a generated ID maps to the group's
// partition, so it is found at the first look.
func TestGroupPartitionsByID(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		const parts = 4
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithPartitions(parts))
		t.Cleanup(func() { _ = q.Close() })
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close() })
		const group = "tenant-1"
		gp := keys.PartitionOf(group, parts)
		id := redistest.IDIn((gp+1)%parts, parts) // elsewhere than the group
		if _, err := dq.Offer(ctx, "v", time.Hour, delayed.WithID(id), delayed.WithGroup(group)); err != nil {
			t.Fatal(err)
		}
		if ok, err := dq.Contains(ctx, id); err != nil || !ok {
			t.Fatalf("Contains = %v, %v", ok, err)
		}
		if it, err := dq.Get(ctx, id); err != nil || it.Group != group {
			t.Fatalf("Get = %+v, %v", it, err)
		}
		if err := dq.Update(ctx, id, "v2"); err != nil {
			t.Fatal(err)
		}
		if err := dq.Promote(ctx, id); err != nil {
			t.Fatal(err)
		}
		// Ready now, in its group: Delete finds it there.
		in := inspect.New(rdb)
		if it, err := in.Get(ctx, q.Name(), id); err != nil || it.State != inspect.Ready || it.Group != group || it.Value != "v2" {
			t.Fatalf("inspect Get = %+v, %v", it, err)
		}
		if err := in.Delete(ctx, q.Name(), id); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size after Delete = %d, %v", n, err)
		}
		// Generated IDs map to the group's partition.
		for range 5 {
			gen, err := dq.Offer(ctx, "w", time.Hour, delayed.WithGroup(group))
			if err != nil {
				t.Fatal(err)
			}
			if p := keys.PartitionOf(gen, parts); p != gp {
				t.Fatalf("generated ID %q in partition %d, the group's is %d", gen, p, gp)
			}
			if ok, err := dq.Remove(ctx, gen); err != nil || !ok {
				t.Fatalf("Remove = %v, %v", ok, err)
			}
		}
	})
}

// Groups with the other features: priorities order a group's items; an
// item past its TTL frees its group's slot; the bound counts grouped
// items; a nacked item and a redriven dead letter go back to their group;
// Purge empties the groups and leaves no key of them behind.
func TestGroupWithOtherFeatures(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxSize(6), blocking.WithMaxAttempts(1))
		t.Cleanup(func() { _ = q.Close() })
		recordGroupLimit(t, rdb, name, blocking.WithGroupConcurrency(1))

		// Priorities within a group; the bound counts grouped items.
		for i, p := range []int{0, 5, 9} {
			if _, err := q.Offer(ctx, fmt.Sprintf("a/p%d-%d", p, i), blocking.WithGroup("a"), blocking.WithPriority(p)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Offer(ctx, "b/ttl", blocking.WithGroup("b"), blocking.WithTTL(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		offerGroups(t, q, 2, "c")
		if _, err := q.Offer(ctx, "a/over", blocking.WithGroup("a")); !errors.Is(err, blocking.ErrQueueFull) {
			t.Fatalf("offer past the bound: %v, want ErrQueueFull", err)
		}
		time.Sleep(5 * time.Millisecond) // b/ttl's deadline passes

		// One turn each: a's highest priority, b's expired item dead-lettered
		// (its slot freed), c/0.
		ds, err := q.ReceiveBatch(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(values(ds), ","); got != "a/p9-2,c/0" {
			t.Fatalf("first round = %s", got)
		}
		gs, err := q.Groups(ctx, 0, 10)
		if err != nil || len(gs) != 2 {
			t.Fatalf("Groups = %+v, %v (b's expired item must leave no group)", gs, err)
		}
		// Nack a's item: max attempts 1 dead-letters it; redriven, it is
		// back in group a, behind a's others... and c/0 is acked.
		if err := ds[0].Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if err := ds[1].Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := q.Redrive(ctx, 0); err != nil || n != 2 {
			t.Fatalf("Redrive = %d, %v; want a/p9-2 and b/ttl", n, err)
		}
		var rest []string
		for range 5 {
			d, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rest = append(rest, d.Value)
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		var a []string
		for _, v := range rest {
			if groupOf(v) == "a" {
				a = append(a, v)
			}
		}
		// Priority first within the group, the redriven item included.
		if got := strings.Join(a, ","); got != "a/p9-2,a/p5-1,a/p0-0" {
			t.Fatalf("group a = %s (all: %v)", got, rest)
		}

		// Purge with items in groups and one in flight.
		offerGroups(t, q, 3, "d")
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n, err := q.Purge(ctx); err != nil || n != 2 {
			t.Fatalf("Purge = %d, %v; want 2", n, err)
		}
		if gs, err := q.Groups(ctx, 0, 10); err != nil || len(gs) != 1 || gs[0] != (blocking.GroupInfo{Key: "d", InFlight: 1}) {
			t.Fatalf("Groups after Purge = %+v, %v", gs, err)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		offerGroups(t, q, 1, "e")
		if v, err := q.Take(ctx); err != nil || v != "e/0" {
			t.Fatalf("Take after Purge = %q, %v", v, err)
		}
		if ks := groupKeys(t, rdb, name); len(ks) != 0 {
			t.Fatalf("keys left behind: %v", ks)
		}
		if st, err := q.Stats(ctx); err != nil || st.Ready+st.Inflight+st.Dead != 0 {
			t.Fatalf("Stats = %+v, %v", st, err)
		}
	})
}

// A consumer that dies holding a group's turn (moved to the claimed list
// by its blocking wait, never acted on) holds the group up for seconds,
// not for the claimed list's 30 s hold: the reclaimer gives a turn back
// early, which is safe since a consumer acts on a turn only if it is
// still claimed.
func TestGroupTurnOfADeadConsumer(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithSweepInterval(200*time.Millisecond))
		t.Cleanup(func() { _ = q.Close() })
		offerGroups(t, q, 2, "g")
		k := redistest.KeysOf(name)
		// The dead consumer's wait: the turn leaves the ready list.
		turn, err := rdb.BLMove(ctx, k.Ready, k.Claimed, "RIGHT", "LEFT", time.Second).Result()
		if err != nil || !strings.HasPrefix(turn, "\x00\x01") {
			t.Fatalf("BLMOVE = %q, %v", turn, err)
		}
		start := time.Now()
		wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		v, err := q.Take(wctx)
		if err != nil || v != "g/0" {
			t.Fatalf("Take = %q, %v after %v (the claimed list's hold is %v)", v, err, time.Since(start), 30*time.Second)
		}
		t.Logf("the group's turn came back after %v", time.Since(start).Round(time.Millisecond))
		if v, err := q.Take(wctx); err != nil || v != "g/1" {
			t.Fatalf("Take = %q, %v", v, err)
		}
	})
}

// Duplicate modes keep an item's group: a replaced pending item and a
// debounced one become ready in their group; WithUniqueFor refuses a
// second offer of the ID whatever its group.
func TestGroupDuplicateModes(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		t.Cleanup(func() { _ = q.Close() })
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close() })
		offerGroups(t, q, 5, "big")
		for _, v := range []string{"late/old", "late/0"} {
			if _, err := dq.Offer(ctx, v, 50*time.Millisecond, delayed.WithID("r"), delayed.WithGroup("late"), delayed.WithReplace()); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dq.Offer(ctx, "late/1", 50*time.Millisecond, delayed.WithID("d"), delayed.WithGroup("late"), delayed.WithDebounce(time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, "u/0", 0, delayed.WithID("u"), delayed.WithGroup("u"), delayed.WithUniqueFor(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, "u/1", 0, delayed.WithID("u"), delayed.WithGroup("other"), delayed.WithUniqueFor(time.Minute)); !errors.Is(err, delayed.ErrDuplicate) {
			t.Fatalf("a second WithUniqueFor offer: %v, want ErrDuplicate", err)
		}
		redistest.WaitFor(t, 10*time.Second, "the delayed items to join their group", func() bool {
			gs, err := q.Groups(ctx, 0, 10)
			for _, g := range gs {
				if g.Key == "late" && g.Ready == 2 {
					return true
				}
			}
			return err != nil
		})
		got := drainBy(t, q, "Take", 8)
		checkOrderWithin(t, got)
		pos := slices.Index(got, "late/1")
		if pos < 0 || pos > 5 {
			t.Fatalf("late/1 at %d in %v", pos, got)
		}
	})
}
