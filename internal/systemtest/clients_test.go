package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/transfer"
)

// Bounds of the waits in this file. They are generous for a loaded
// two-core machine running with -race; the latency they bound is logged.
const (
	// clientsWait bounds one operation that should succeed at once.
	clientsWait = 10 * time.Second
	// clientsSwitchWait bounds the wait, after a failover, for the client
	// to reach the new master.
	clientsSwitchWait = 15 * time.Second
	// clientsWakeArrival bounds how late an item offered with a 100 ms delay
	// may arrive when the transfer is woken by its subscription.
	clientsWakeArrival = 2 * time.Second
	// clientsSweepArrival bounds how late such an item may arrive when the
	// transfer can only sweep (every second by default).
	clientsSweepArrival = 2500 * time.Millisecond
)

// clientsNoPanic runs f, turning a panic into a test error named after what.
func clientsNoPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	f()
}

// clientsWantRefused checks that err wraps ErrInvalidQueue and says why.
func clientsWantRefused(t *testing.T, what string, err error) {
	t.Helper()
	switch {
	case err == nil:
		t.Errorf("%s on a *redis.Ring returned no error, want one wrapping ErrInvalidQueue", what)
	case !errors.Is(err, blocking.ErrInvalidQueue):
		t.Errorf("%s on a *redis.Ring = %v, want an error wrapping ErrInvalidQueue", what, err)
	case !strings.Contains(err.Error(), "Ring"):
		t.Errorf("%s on a *redis.Ring = %q: the message does not name the reason (Ring)", what, err)
	}
}

// TestRingClientRefused: every entry point refuses a *redis.Ring with an
// error wrapping ErrInvalidQueue that names the Ring, panics nowhere, and
// writes nothing to the shard.
func TestRingClientRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"shard1": srv.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	bg := context.Background()

	if transfer.ErrInvalidQueue != blocking.ErrInvalidQueue {
		t.Errorf("transfer.ErrInvalidQueue is not blocking.ErrInvalidQueue")
	}

	var q *blocking.Queue[string]
	clientsNoPanic(t, "blocking.New", func() { q = blocking.New[string](ring, "q") })
	if q == nil {
		t.Fatal("blocking.New returned nil")
	}

	clientsNoPanic(t, "Offer", func() {
		_, err := q.Offer(bg, "x")
		clientsWantRefused(t, "Offer", err)
	})
	clientsNoPanic(t, "Take", func() {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		_, err := q.Take(ctx)
		clientsWantRefused(t, "Take", err)
	})
	clientsNoPanic(t, "Poll", func() {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		_, ok, err := q.Poll(ctx, 100*time.Millisecond)
		if ok {
			t.Errorf("Poll on a *redis.Ring returned an item")
		}
		clientsWantRefused(t, "Poll", err)
	})
	clientsNoPanic(t, "Receive", func() {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		d, err := q.Receive(ctx)
		if d != nil {
			t.Errorf("Receive on a *redis.Ring returned a delivery")
		}
		clientsWantRefused(t, "Receive", err)
	})
	clientsNoPanic(t, "Consume", func() {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		err := q.Consume(ctx, func(context.Context, *blocking.Delivery[string]) error {
			t.Errorf("Consume on a *redis.Ring ran the handler")
			return nil
		})
		clientsWantRefused(t, "Consume", err)
	})
	clientsNoPanic(t, "Size", func() {
		_, err := q.Size(bg)
		clientsWantRefused(t, "Size", err)
	})

	var dq *delayed.Queue[string]
	clientsNoPanic(t, "delayed.New", func() { dq = delayed.New(q) })
	if dq != nil {
		clientsNoPanic(t, "delayed Offer", func() {
			_, err := dq.Offer(bg, "x", 100*time.Millisecond)
			clientsWantRefused(t, "delayed Offer", err)
		})
		clientsNoPanic(t, "delayed Close", func() {
			if err := dq.Close(); err != nil {
				t.Errorf("delayed Close = %v", err)
			}
		})
	} else {
		t.Errorf("delayed.New returned nil")
	}

	clientsNoPanic(t, "transfer.Run", func() {
		// Run must refuse at once, not run until ctx ends.
		ctx, cancel := context.WithTimeout(bg, clientsWait)
		defer cancel()
		err := transfer.Run(ctx, ring, []string{"q"})
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("transfer.Run on a *redis.Ring ran until its context ended: %v", err)
		}
		clientsWantRefused(t, "transfer.Run", err)
		if !errors.Is(err, transfer.ErrInvalidQueue) {
			t.Errorf("transfer.Run on a *redis.Ring = %v, want an error wrapping transfer.ErrInvalidQueue", err)
		}
	})

	clientsNoPanic(t, "Close", func() {
		if err := q.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})

	// Nothing reached the shard.
	ctx, cancel := context.WithTimeout(bg, clientsWait)
	defer cancel()
	if n, err := srv.Client(t).DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("the Ring's shard holds %d keys (err %v) after refused calls, want 0", n, err)
	}
}

// clientsTake takes one item within clientsWait.
func clientsTake(t *testing.T, q *blocking.Queue[string], what string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientsWait)
	defer cancel()
	v, err := q.Take(ctx)
	if err != nil {
		t.Fatalf("%s: Take = %v", what, err)
	}
	return v
}

// clientsOffer offers v and fails the test on an error.
func clientsOffer(t *testing.T, q *blocking.Queue[string], v, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientsWait)
	defer cancel()
	if _, err := q.Offer(ctx, v); err != nil {
		t.Fatalf("%s: Offer(%q) = %v", what, v, err)
	}
}

// clientsDelayedArrives offers v with a 100 ms delay and takes it, failing
// when it arrives later than within after the offer.
func clientsDelayedArrives(t *testing.T, q *blocking.Queue[string], dq *delayed.Queue[string], v string, within time.Duration, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientsWait)
	defer cancel()
	start := time.Now()
	if _, err := dq.Offer(ctx, v, 100*time.Millisecond); err != nil {
		t.Fatalf("%s: delayed Offer(%q) = %v", what, v, err)
	}
	wctx, wcancel := context.WithTimeout(ctx, within)
	defer wcancel()
	got, err := q.Take(wctx)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("%s: item offered with a 100ms delay not taken within %v: Take = %v", what, within, err)
	}
	if got != v {
		t.Fatalf("%s: Take = %q, want %q", what, got, v)
	}
	if elapsed < 100*time.Millisecond {
		t.Errorf("%s: item offered with a 100ms delay taken after %v", what, elapsed)
	}
	t.Logf("%s: item offered with a 100ms delay taken after %v", what, elapsed.Round(time.Millisecond))
}

// clientsReceiveAck receives one item within clientsWait, checks its value
// and acks it.
func clientsReceiveAck(t *testing.T, q *blocking.Queue[string], want, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientsWait)
	defer cancel()
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatalf("%s: Receive = %v", what, err)
	}
	if d.Value != want || d.Attempt != 1 {
		t.Fatalf("%s: Receive = %q (attempt %d), want %q (attempt 1)", what, d.Value, d.Attempt, want)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatalf("%s: Ack = %v", what, err)
	}
}

// clientsConsume runs Consume until it has handled len(want) items, then
// stops it and checks that it handled exactly want (in any order).
func clientsConsume(t *testing.T, q *blocking.Queue[string], want []string, what string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan string, 2*len(want)+8)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			got <- d.Value
			return nil
		})
	}()
	var seen []string
	timeout := time.NewTimer(clientsWait)
	defer timeout.Stop()
	for len(seen) < len(want) {
		select {
		case v := <-got:
			seen = append(seen, v)
		case err := <-done:
			t.Fatalf("%s: Consume returned %v after handling %q, want %q", what, err, seen, want)
		case <-timeout.C:
			cancel()
			<-done
			t.Fatalf("%s: Consume handled %q within %v, want %q", what, seen, clientsWait, want)
		}
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Consume = %v after its context was cancelled, want context.Canceled", what, err)
		}
	case <-time.After(clientsWait):
		t.Fatalf("%s: Consume did not return within %v of its context's end", what, clientsWait)
	}
	for len(got) > 0 {
		seen = append(seen, <-got)
	}
	slices.Sort(seen)
	w := slices.Sorted(slices.Values(want))
	if !slices.Equal(seen, w) {
		t.Fatalf("%s: Consume handled %q, want %q", what, seen, w)
	}
}

// clientsSettled checks that the queue holds nothing: no ready, delayed,
// leased or claimed item.
func clientsSettled(t *testing.T, rdb redis.UniversalClient, name, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientsWait)
	defer cancel()
	k := redistest.KeysOf(name)
	for key, n := range map[string]*redis.IntCmd{
		"ready":    rdb.LLen(ctx, k.Ready),
		"claimed":  rdb.LLen(ctx, k.Claimed),
		"delayed":  rdb.ZCard(ctx, k.Delayed),
		"retry":    rdb.ZCard(ctx, k.Retry),
		"leases":   rdb.ZCard(ctx, k.Leases),
		"inflight": rdb.HLen(ctx, k.Inflight),
	} {
		if v, err := n.Result(); err != nil || v != 0 {
			t.Errorf("%s: %s holds %d (err %v), want 0", what, key, v, err)
		}
	}
}

// TestFailoverClient: a queue on a failover (Sentinel) client offers,
// takes, receives, consumes and transfers delayed items, and goes on doing
// so, on the same queue and client, after a failover.
//
// The queue's sweep interval is a minute, so an item offered with a delay
// arrives within clientsWakeArrival only when the transfer service's
// wake-up subscription works: after the failover, only if it followed the
// switch.
func TestFailoverClient(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	rdb := s.Client(t)
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name, blocking.WithSweepInterval(time.Minute))
	dq := delayed.New(q)
	t.Cleanup(func() {
		closed := make(chan struct{})
		go func() {
			_ = dq.Close()
			_ = q.Close()
			close(closed)
		}()
		select {
		case <-closed:
		case <-time.After(clientsWait):
			t.Errorf("Close did not return within %v", clientsWait)
		}
	})

	// Before the failover.
	clientsOffer(t, q, "b1", "before failover")
	clientsOffer(t, q, "b2", "before failover")
	for _, want := range []string{"b1", "b2"} {
		if got := clientsTake(t, q, "before failover"); got != want {
			t.Fatalf("before failover: Take = %q, want %q", got, want)
		}
	}
	clientsDelayedArrives(t, q, dq, "b-delayed", clientsWakeArrival, "before failover")
	clientsOffer(t, q, "b-receive", "before failover")
	clientsReceiveAck(t, q, "b-receive", "before failover")
	for _, v := range []string{"b-c1", "b-c2", "b-c3"} {
		clientsOffer(t, q, v, "before failover")
	}
	clientsConsume(t, q, []string{"b-c1", "b-c2", "b-c3"}, "before failover")
	clientsSettled(t, rdb, name, "before failover")

	oldMaster := s.Master().Addr()
	newMaster := s.Failover(t)
	if newMaster == oldMaster {
		t.Fatalf("Failover kept master %s", oldMaster)
	}

	// The switch: the client may still hold connections to the former
	// master, now a replica. Offer a probe and take it until both work.
	start := time.Now()
	deadline := start.Add(clientsSwitchWait)
	var lastErr error
	switched := false
	for i := 0; time.Now().Before(deadline); i++ {
		probe := fmt.Sprintf("probe-%d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := q.Offer(ctx, probe)
		if err == nil {
			var v string
			var ok bool
			v, ok, err = q.Poll(ctx, time.Second)
			if err == nil && ok && strings.HasPrefix(v, "probe-") {
				switched = true
			} else if err == nil {
				err = fmt.Errorf("Poll = %q, %v", v, ok)
			}
		}
		cancel()
		if switched {
			break
		}
		lastErr = err
		time.Sleep(50 * time.Millisecond)
	}
	if !switched {
		t.Fatalf("after failover to %s: offer and take did not work within %v: last error %v", newMaster, clientsSwitchWait, lastErr)
	}
	t.Logf("after failover: offer and take work again after %v (last error before: %v)", time.Since(start).Round(time.Millisecond), lastErr)
	// Probes of failed rounds that were stored after all.
	for {
		ctx, cancel := context.WithTimeout(context.Background(), clientsWait)
		v, ok, err := q.Poll(ctx, 0)
		cancel()
		if err != nil {
			t.Fatalf("after failover: draining probes: Poll = %v", err)
		}
		if !ok {
			break
		}
		if !strings.HasPrefix(v, "probe-") {
			t.Fatalf("after failover: draining probes: Poll = %q", v)
		}
	}

	// After the failover, on the same queue and client.
	clientsOffer(t, q, "a1", "after failover")
	clientsOffer(t, q, "a2", "after failover")
	for _, want := range []string{"a1", "a2"} {
		if got := clientsTake(t, q, "after failover"); got != want {
			t.Fatalf("after failover: Take = %q, want %q", got, want)
		}
	}
	clientsDelayedArrives(t, q, dq, "a-delayed", clientsWakeArrival, "after failover")
	clientsOffer(t, q, "a-receive", "after failover")
	clientsReceiveAck(t, q, "a-receive", "after failover")
	for _, v := range []string{"a-c1", "a-c2", "a-c3"} {
		clientsOffer(t, q, v, "after failover")
	}
	clientsConsume(t, q, []string{"a-c1", "a-c2", "a-c3"}, "after failover")
	clientsSettled(t, rdb, name, "after failover")

	// The data is on the new master.
	ctx, cancel := context.WithTimeout(context.Background(), clientsWait)
	defer cancel()
	if addr := s.Master().Addr(); addr != newMaster {
		t.Errorf("master after the failover is %s, want %s", addr, newMaster)
	}
	if role, err := rdb.Do(ctx, "ROLE").Slice(); err != nil || len(role) == 0 || role[0] != "master" {
		t.Errorf("the failover client's ROLE = %v, %v; want master", role, err)
	}
}

// panickySubscribe is a user's own redis.UniversalClient: a *redis.Client
// whose Subscribe panics, so that the transfer service cannot subscribe to
// wake-ups.
type panickySubscribe struct {
	*redis.Client
	subscribes atomic.Int64
}

func (c *panickySubscribe) Subscribe(context.Context, ...string) *redis.PubSub {
	c.subscribes.Add(1)
	panic("panickySubscribe: Subscribe is not supported")
}

// TestCustomUniversalClientNeverPanics: a queue on a user's client type
// whose Subscribe panics works, its delayed items arriving by the sweep.
func TestCustomUniversalClientNeverPanics(t *testing.T) {
	rdb := &panickySubscribe{Client: redistest.Standalone(t)}
	name := redistest.QueueName(t)
	var _ redis.UniversalClient = rdb

	var q *blocking.Queue[string]
	var dq *delayed.Queue[string]
	clientsNoPanic(t, "blocking.New", func() { q = blocking.New[string](rdb, name) })
	if q == nil {
		t.Fatal("blocking.New returned nil")
	}
	clientsNoPanic(t, "delayed.New", func() { dq = delayed.New(q) })
	if dq == nil {
		t.Fatal("delayed.New returned nil")
	}
	closed := false
	closeAll := func() {
		if closed {
			return
		}
		closed = true
		done := make(chan struct{})
		go func() {
			defer close(done)
			clientsNoPanic(t, "delayed Close", func() { _ = dq.Close() })
			clientsNoPanic(t, "Close", func() {
				if err := q.Close(); err != nil {
					t.Errorf("Close = %v", err)
				}
			})
		}()
		select {
		case <-done:
		case <-time.After(clientsWait):
			t.Errorf("Close did not return within %v", clientsWait)
		}
	}
	t.Cleanup(closeAll)

	clientsNoPanic(t, "Offer and Take", func() {
		clientsOffer(t, q, "c1", "custom client")
		clientsOffer(t, q, "c2", "custom client")
		for _, want := range []string{"c1", "c2"} {
			if got := clientsTake(t, q, "custom client"); got != want {
				t.Fatalf("custom client: Take = %q, want %q", got, want)
			}
		}
	})
	clientsNoPanic(t, "delayed Offer and Take", func() {
		clientsDelayedArrives(t, q, dq, "c-delayed", clientsSweepArrival, "custom client")
		clientsDelayedArrives(t, q, dq, "c-delayed-2", clientsSweepArrival, "custom client")
	})
	if n := rdb.subscribes.Load(); n == 0 {
		t.Errorf("the transfer service never called Subscribe: the test did not exercise its fallback")
	} else {
		t.Logf("Subscribe called (and panicked) %d times", n)
	}
	clientsSettled(t, rdb, name, "custom client")
	closeAll()
}

// TestClusterClientSlotsOneQueue: every key of a queue hashes to one
// cluster slot (its scripts touch one slot), and the queue works on a
// *redis.ClusterClient.
func TestClusterClientSlotsOneQueue(t *testing.T) {
	rdb := redistest.ClusterClient(t)
	name := redistest.QueueName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*clientsWait)
	defer cancel()

	k := redistest.KeysOf(name)
	tagSlot, err := rdb.ClusterKeySlot(ctx, "{"+name+"}").Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT {%s}: %v", name, err)
	}
	for _, key := range []string{
		k.Ready, k.Delayed, k.Items, k.Seq, k.Retry, k.Leases, k.Inflight,
		k.Claimed, k.Seen, k.Meta, k.DeadReady, k.Lane("x"),
	} {
		if !strings.Contains(key, "{"+name+"}") {
			t.Errorf("key %q does not carry the hash tag {%s}", key, name)
		}
		slot, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
		}
		if slot != tagSlot {
			t.Errorf("key %q is in slot %d, want %d (the slot of {%s})", key, slot, tagSlot, name)
		}
	}

	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	for _, v := range []string{"k1", "k2"} {
		clientsOffer(t, q, v, "cluster")
	}
	for _, want := range []string{"k1", "k2"} {
		clientsReceiveAck(t, q, want, "cluster")
	}
	clientsSettled(t, rdb, name, "cluster")
}
