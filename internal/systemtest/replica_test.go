package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// Tests of WithReplicaAck: its arguments, what a write returns when WAIT
// does not confirm it (ErrNotReplicated, the write done all the same), and
// when it does. The failover tests that rely on it are in
// replica_failover_test.go.

func TestReplicaAckInvalid(t *testing.T) {
	rdb := redistest.Standalone(t)
	short := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, ReadTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { _ = short.Close() })
	ctx := context.Background()
	rt := rdb.Options().ReadTimeout // go-redis's default
	cases := []struct {
		name     string
		rdb      redis.UniversalClient
		replicas int
		timeout  time.Duration
		want     string
	}{
		{"no replica", rdb, 0, time.Second, "replicas 0: must be at least 1"},
		{"negative replicas", rdb, -1, time.Second, "replicas -1"},
		{"zero timeout", rdb, 1, 0, "timeout 0s: must be positive"},
		{"negative timeout", rdb, 1, -time.Second, "must be positive"},
		{"absurd timeout", rdb, 1, 2 * time.Hour, "at most 1m0s"},
		{"timeout beyond the default read timeout", rdb, 1, rt, fmt.Sprintf("ReadTimeout (%v)", rt)},
		{"timeout beyond a short read timeout", short, 1, 400 * time.Millisecond, "ReadTimeout (500ms)"},
	}
	for _, c := range cases {
		q := blocking.New[int](c.rdb, redistest.QueueName(t), blocking.WithReplicaAck(c.replicas, c.timeout))
		_, err := q.Offer(ctx, 1)
		if !errors.Is(err, blocking.ErrInvalidQueue) || !strings.Contains(err.Error(), "WithReplicaAck") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Offer = %v, want ErrInvalidQueue naming WithReplicaAck and %q", c.name, err, c.want)
		}
		_ = q.Close()
	}
	// Within the bounds.
	q := blocking.New[int](rdb, redistest.QueueName(t), blocking.WithReplicaAck(1, rt-150*time.Millisecond))
	if _, err := q.Stats(ctx); err != nil {
		t.Errorf("WithReplicaAck(1, %v) on a client with a %v read timeout: %v", rt-150*time.Millisecond, rt, err)
	}
}

// replicaLog records the library's warnings.
type replicaLog struct {
	mu   sync.Mutex
	msgs []string
}

func (l *replicaLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *replicaLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.msgs = append(l.msgs, r.Message)
	return nil
}
func (l *replicaLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *replicaLog) WithGroup(string) slog.Handler      { return l }
func (l *replicaLog) has(part string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.msgs {
		if strings.Contains(m, part) {
			return true
		}
	}
	return false
}

// With no replica to confirm them (WAIT returns 0), every write that
// waits returns an error wrapping ErrNotReplicated after the timeout, and
// the write is done all the same: offers return their IDs and the items
// are stored, acks and nacks settle their deliveries. On the cluster, the
// write and WAIT go to the master of the queue's slot.
func TestReplicaAckNotReplicated(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		logs := &replicaLog{}
		const timeout = 50 * time.Millisecond
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithReplicaAck(1, timeout),
			blocking.WithLogger(slog.New(logs)))
		t.Cleanup(func() { _ = q.Close() })
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close() })
		notReplicated := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, blocking.ErrNotReplicated) || !errors.Is(err, delayed.ErrNotReplicated) ||
				!strings.Contains(err.Error(), "0 of 1 replicas confirmed within 50ms") {
				t.Fatalf("%s = %v, want ErrNotReplicated saying 0 of 1 replicas confirmed", what, err)
			}
		}

		// An offer: ErrNotReplicated with its ID, and the item stored.
		start := time.Now()
		id, err := q.Offer(ctx, "a")
		notReplicated("Offer", err)
		if id == "" {
			t.Fatal("Offer returned no ID with ErrNotReplicated: the item was stored")
		}
		if took := time.Since(start); took < timeout-time.Millisecond {
			t.Errorf("Offer returned after %v, before WAIT's timeout", took)
		}
		d, err := q.Receive(ctx)
		if err != nil || d.ID != id || d.Value != "a" {
			t.Fatalf("Receive = %+v, %v; want the item offered", d, err)
		}
		// An ack: ErrNotReplicated, and the delivery settled.
		notReplicated("Ack", d.Ack(ctx))
		if err := d.Ack(ctx); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("second Ack = %v, want ErrLeaseLost (the first one settled it)", err)
		}
		// A nack: ErrNotReplicated, and the item back for a retry.
		id, err = q.Offer(ctx, "b")
		notReplicated("Offer", err)
		d, err = q.Receive(ctx)
		if err != nil || d.ID != id {
			t.Fatalf("Receive = %+v, %v", d, err)
		}
		notReplicated("Nack", d.Nack(ctx, 0))
		d, err = q.Receive(ctx)
		if err != nil || d.ID != id || d.Attempt != 2 {
			t.Fatalf("Receive after Nack = %+v, %v; want %s, attempt 2", d, err, id)
		}
		notReplicated("Ack", d.Ack(ctx))

		// Delayed offers, each mode.
		id, err = dq.Offer(ctx, "c", time.Hour, delayed.WithID("c"))
		notReplicated("delayed Offer", err)
		if id != "c" {
			t.Fatalf("delayed Offer returned ID %q, want c", id)
		}
		if _, err := dq.Offer(ctx, "c2", time.Hour, delayed.WithID("c")); !errors.Is(err, delayed.ErrDuplicate) || errors.Is(err, blocking.ErrNotReplicated) {
			t.Fatalf("duplicate delayed Offer = %v, want ErrDuplicate only (it stored nothing)", err)
		}
		_, err = dq.OfferAt(ctx, "d", time.Now().Add(time.Hour), delayed.WithID("d"))
		notReplicated("OfferAt", err)
		_, err = dq.Offer(ctx, "d2", time.Hour, delayed.WithID("d"), delayed.WithReplace())
		notReplicated("Offer WithReplace", err)
		_, err = dq.Offer(ctx, "e", time.Hour, delayed.WithID("e"), delayed.WithUniqueFor(time.Minute))
		notReplicated("Offer WithUniqueFor", err)
		ids, err := dq.OfferBatch(ctx, []string{"f", "g", "h"}, time.Hour)
		notReplicated("OfferBatch", err)
		if len(ids) != 3 {
			t.Fatalf("OfferBatch returned %d IDs with ErrNotReplicated, want 3 (stored)", len(ids))
		}
		for _, id := range append(ids, "c", "d", "e") {
			if ok, err := dq.Contains(ctx, id); err != nil || !ok {
				t.Errorf("Contains(%s) = %v, %v; want stored", id, ok, err)
			}
		}
		if it, err := dq.Get(ctx, "d"); err != nil || it.Value != "d2" {
			t.Errorf("Get(d) = %+v, %v; want the replacement", it, err)
		}

		// Consume: its batched ack is not confirmed either; the item is
		// acked all the same, and the warning says so.
		if _, err := q.Offer(ctx, "i"); !errors.Is(err, blocking.ErrNotReplicated) {
			t.Fatalf("Offer = %v", err)
		}
		cctx, stop := context.WithCancel(ctx)
		handled := make(chan string, 10)
		done := make(chan error, 1)
		go func() {
			done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
				handled <- d.Value
				return nil
			})
		}()
		if v := <-handled; v != "i" {
			t.Fatalf("Consume handled %q, want i", v)
		}
		redistest.WaitFor(t, 5*time.Second, "Consume's ack", func() bool {
			return logs.has("not confirmed by replicas")
		})
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Consume = %v", err)
		}
		st, err := q.Stats(ctx)
		if err != nil || st.Ready != 0 || st.Inflight != 0 || st.Retry != 0 {
			t.Fatalf("Stats = %+v, %v; want nothing left but the delayed items", st, err)
		}
	})
}

// With a live replica, every write returns nil, and when it does the
// replica has it.
func TestReplicaAckConfirmed(t *testing.T) {
	t.Parallel()
	master := redistest.StartServer(t)
	replica := redistest.StartReplica(t, master)
	rdb, rr := master.Client(t), replica.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	name := redistest.QueueName(t)
	k := redistest.KeysOf(name)
	q := blocking.New[string](rdb, name, blocking.WithReplicaAck(1, 2*time.Second))
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close() })

	onReplica := func(what string, key string, want int64) {
		t.Helper()
		var n int64
		var err error
		switch key {
		case k.Ready:
			n, err = rr.LLen(ctx, key).Result()
		case k.Inflight:
			n, err = rr.HLen(ctx, key).Result()
		default:
			n, err = rr.ZCard(ctx, key).Result()
		}
		if err != nil || n != want {
			t.Fatalf("after %s returned nil, the replica holds %d in %s (%v), want %d", what, n, key, err, want)
		}
	}
	if _, err := q.Offer(ctx, "a"); err != nil {
		t.Fatalf("Offer = %v", err)
	}
	onReplica("Offer", k.Ready, 1)
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Nack(ctx, time.Hour); err != nil {
		t.Fatalf("Nack = %v", err)
	}
	onReplica("Nack", k.Retry, 1)
	if _, err := dq.Offer(ctx, "b", time.Hour, delayed.WithID("b")); err != nil {
		t.Fatalf("delayed Offer = %v", err)
	}
	if _, err := dq.Offer(ctx, "b2", time.Hour, delayed.WithID("b"), delayed.WithDebounce(time.Hour)); err != nil {
		t.Fatalf("delayed Offer WithDebounce = %v", err)
	}
	if _, err := dq.OfferBatch(ctx, make([]string, 1200), time.Hour); err != nil {
		t.Fatalf("OfferBatch = %v", err)
	}
	onReplica("OfferBatch", k.Delayed, 1201)
	if _, err := q.Offer(ctx, "c"); err != nil {
		t.Fatalf("Offer = %v", err)
	}
	d, err = q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatalf("Ack = %v", err)
	}
	onReplica("Ack", k.Inflight, 0)

	// What WAIT costs on loopback: sequential offers, with and without.
	plain := blocking.New[string](rdb, name+"-plain")
	t.Cleanup(func() { _ = plain.Close() })
	const n = 300
	per := func(q *blocking.Queue[string]) time.Duration {
		start := time.Now()
		for range n {
			if _, err := q.Offer(ctx, "x"); err != nil {
				t.Fatalf("Offer = %v", err)
			}
		}
		return time.Since(start) / n
	}
	without, with := per(plain), per(q)
	t.Logf("replica ack: a sequential Offer took %v without WithReplicaAck, %v with WithReplicaAck(1, 2s) (one replica on loopback; %d offers each)",
		without.Round(time.Microsecond), with.Round(time.Microsecond), n)
}
