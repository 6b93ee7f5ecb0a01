package queue

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// readyItems offers n items ready now to c.
func readyItems(t *testing.T, c *part, n int) {
	t.Helper()
	for i := range n {
		id := NewID()
		env, err := c.Encode(id, i, nil, nil, 0, 0, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Offer(context.Background(), store.OfferItem{ID: id, Env: env, Mode: 'r'}); err != nil {
			t.Fatal(err)
		}
	}
}

// leaseN leases up to n ready items of c in one call.
func leaseN(ctx context.Context, c *part, n int) ([]*Lease, error) {
	return c.lease(ctx, n, nil, ReceiveRequest{}, func(*Lease) error { return nil })
}

// scriptCalls counts, from now on, the calls of script that rdb sends.
func scriptCalls(rdb redis.UniversalClient, script *redis.Script) func() int64 {
	n := redistest.CountCommands(rdb, func(args []any) bool {
		s, _ := args[0].(string)
		return s == "evalsha" && len(args) > 1 && args[1] == script.Hash()
	})
	return n.Load
}

// inflight is how many leases c's queue holds.
func inflight(t *testing.T, rdb redis.UniversalClient, c *part) int64 {
	t.Helper()
	n, err := rdb.HLen(context.Background(), c.Keys.Inflight).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// waitFor polls cond until it holds, for 10 s at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// queued is how many inputs wait in b's queue.
func queued[I, O any](b *batcher[I, O]) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// neverSlow makes b take the call in flight for one that is not slow, so
// that inputs queued behind it wait for it (instead of a second sender
// after slowCall, which a loaded machine may reach).
func neverSlow[I, O any](b *batcher[I, O]) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sent = time.Now().Add(time.Hour)
}

// A lone ack goes from its caller's goroutine, whatever its context: no
// sender is started.
func TestLoneAckSentByCaller(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := testCore(t, rdb)
		readyItems(t, c, 1)
		ls, err := leaseN(context.Background(), c, 1)
		if err != nil || len(ls) != 1 {
			t.Fatalf("lease = %d, %v", len(ls), err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := AckAll(ctx, ls)[0]; err != nil {
			t.Fatal(err)
		}
		c.acks.mu.Lock()
		n := c.acks.sending
		c.acks.mu.Unlock()
		if n != 0 {
			t.Fatalf("%d ack senders after a lone ack, want 0", n)
		}
		if n := inflight(t, rdb, c); n != 0 {
			t.Fatalf("%d leases held after the ack, want 0", n)
		}
	})
}

// Acks made while an ack call is on its way go together in the next call:
// five acks, two calls; each caller gets its own outcome.
func TestConcurrentAcksCombine(t *testing.T) {
	direct, p, rdb, c := proxiedCore(t)
	readyItems(t, c, 5)
	ls, err := leaseN(context.Background(), c, 5)
	if err != nil || len(ls) != 5 {
		t.Fatalf("lease = %d, %v", len(ls), err)
	}
	if err := lua.Ack.Load(context.Background(), direct).Err(); err != nil {
		t.Fatal(err)
	}
	calls := scriptCalls(rdb, lua.Ack)
	release := p.HoldNextReply()
	defer release()
	errs := make(chan error, len(ls))
	go func() { errs <- ls[0].Ack(context.Background()) }()
	waitFor(t, "the first ack to reach the server", func() bool { return inflight(t, direct, c) == 4 })
	neverSlow(&c.acks)
	var wg sync.WaitGroup
	for _, l := range ls[1:] {
		wg.Go(func() { errs <- l.Ack(context.Background()) })
	}
	waitFor(t, "four acks queued", func() bool { return queued(&c.acks) == 4 })
	release()
	wg.Wait()
	for range ls {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := calls(); n != 2 {
		t.Fatalf("%d ack calls for five acks, four made while the first was on its way; want 2", n)
	}
	if n := inflight(t, direct, c); n != 0 {
		t.Fatalf("%d leases held after the acks, want 0", n)
	}
}

// Receives made while a receive call is on its way share the next call,
// each given its share of the items in order.
func TestConcurrentReceivesShare(t *testing.T) {
	direct, p, rdb, c := proxiedCore(t)
	readyItems(t, c, 10)
	if err := lua.Receive.Load(context.Background(), direct).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.layout.check(context.Background(), &c.bg); err != nil {
		t.Fatal(err)
	}
	calls := scriptCalls(rdb, lua.Receive)
	release := p.HoldNextReply()
	defer release()
	type got struct {
		ls  []*Lease
		err error
	}
	first := make(chan got, 1)
	go func() {
		ls, err := leaseN(context.Background(), c, 1)
		first <- got{ls, err}
	}()
	waitFor(t, "the first receive to reach the server", func() bool { return inflight(t, direct, c) == 1 })
	neverSlow(&c.leases)
	const others = 4
	out := make(chan got, others)
	for range others {
		go func() {
			ls, err := leaseN(context.Background(), c, 2)
			out <- got{ls, err}
		}()
	}
	waitFor(t, "four receives queued", func() bool { return queued(&c.leases) == others })
	release()
	if g := <-first; g.err != nil || len(g.ls) != 1 {
		t.Fatalf("first receive = %d leases, %v; want 1", len(g.ls), g.err)
	}
	seen := map[string]bool{}
	for range others {
		g := <-out
		if g.err != nil || len(g.ls) != 2 {
			t.Fatalf("receive of 2 = %d leases, %v", len(g.ls), g.err)
		}
		for _, l := range g.ls {
			if seen[l.ID] {
				t.Fatalf("item %s leased twice", l.ID)
			}
			seen[l.ID] = true
		}
	}
	if n := calls(); n != 2 {
		t.Fatalf("%d receive calls for five receives, four made while the first was on its way; want 2", n)
	}
	if n := inflight(t, direct, c); n != 9 {
		t.Fatalf("%d leases held, want 9", n)
	}
}

// A receive whose caller stops waiting while its shared call is on its way
// returns at once, and the items leased for it go back to the ready list.
func TestReceiveLeftWhileSentGivesBack(t *testing.T) {
	direct, p, _, c := proxiedCore(t)
	readyItems(t, c, 3)
	if err := lua.Receive.Load(context.Background(), direct).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.layout.check(context.Background(), &c.bg); err != nil {
		t.Fatal(err)
	}
	release := p.HoldNextReply()
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := leaseN(ctx, c, 2)
		done <- err
	}()
	waitFor(t, "the receive to reach the server", func() bool { return inflight(t, direct, c) == 2 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("receive given up on = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a receive given up on did not return while its call was held")
	}
	release()
	waitFor(t, "the items leased for it to go back", func() bool {
		n, err := direct.LLen(context.Background(), c.Keys.Ready).Result()
		return err == nil && n == 3 && inflight(t, direct, c) == 0
	})
}

// readyLen is how many entries c's ready list holds.
func readyLen(t *testing.T, rdb redis.UniversalClient, c *part) int64 {
	t.Helper()
	n, err := rdb.LLen(context.Background(), c.Keys.Ready).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Takes made while a pop call is on its way share the next call, each
// given its own items.
func TestConcurrentTakesShare(t *testing.T) {
	direct, p, rdb, c := proxiedCore(t)
	readyItems(t, c, 10)
	if err := lua.Pop.Load(context.Background(), direct).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.layout.check(context.Background(), &c.bg); err != nil {
		t.Fatal(err)
	}
	calls := scriptCalls(rdb, lua.Pop)
	release := p.HoldNextReply()
	defer release()
	type got struct {
		raws [][]byte
		err  error
	}
	first := make(chan got, 1)
	go func() {
		raws, err := c.popN(context.Background(), 1)
		first <- got{raws, err}
	}()
	waitFor(t, "the first take to reach the server", func() bool { return readyLen(t, direct, c) == 9 })
	neverSlow(&c.pops)
	const others = 4
	out := make(chan got, others)
	for range others {
		go func() {
			raws, err := c.popN(context.Background(), 2)
			out <- got{raws, err}
		}()
	}
	waitFor(t, "four takes queued", func() bool { return queued(&c.pops) == others })
	release()
	if g := <-first; g.err != nil || len(g.raws) != 1 {
		t.Fatalf("first take = %d items, %v; want 1", len(g.raws), g.err)
	}
	seen := map[string]bool{}
	for range others {
		g := <-out
		if g.err != nil || len(g.raws) != 2 {
			t.Fatalf("take of 2 = %d items, %v", len(g.raws), g.err)
		}
		for _, raw := range g.raws {
			if seen[string(raw)] {
				t.Fatalf("item %q taken twice", raw)
			}
			seen[string(raw)] = true
		}
	}
	if n := calls(); n != 2 {
		t.Fatalf("%d pop calls for five takes, four made while the first was on its way; want 2", n)
	}
	if n := readyLen(t, direct, c); n != 1 {
		t.Fatalf("%d items left ready, want 1", n)
	}
}

// A take whose caller stops waiting while its shared call is on its way
// returns at once, and the items taken for it go back to the head of the
// ready list in their order.
func TestTakeLeftWhileSentGivesBack(t *testing.T) {
	direct, p, _, c := proxiedCore(t)
	readyItems(t, c, 3)
	before, err := direct.LRange(context.Background(), c.Keys.Ready, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := lua.Pop.Load(context.Background(), direct).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.layout.check(context.Background(), &c.bg); err != nil {
		t.Fatal(err)
	}
	release := p.HoldNextReply()
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.popN(ctx, 2)
		done <- err
	}()
	waitFor(t, "the take to reach the server", func() bool { return readyLen(t, direct, c) == 1 })
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("take given up on = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a take given up on did not return while its call was held")
	}
	release()
	waitFor(t, "the items taken for it to go back", func() bool { return readyLen(t, direct, c) == 3 })
	after, err := direct.LRange(context.Background(), c.Keys.Ready, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Fatalf("ready list after the give-back differs from before:\n%q\n%q", after, before)
	}
}
