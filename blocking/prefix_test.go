package blocking_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/transfer"
)

// TestPrefix: two queues of one name under two key prefixes share no key:
// neither sees the other's items, counts, pause, dead letters or
// schedules, and each is announced in its own registry only.
func TestPrefix(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		pa, pb := redistest.Prefix(t, rdb), redistest.Prefix(t, rdb)
		a := blocking.New[string](rdb, name, blocking.WithPrefix(pa), blocking.WithMaxAttempts(1))
		b := blocking.New[string](rdb, name, blocking.WithPrefix(pb))
		t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
		da := delayed.New(a)
		t.Cleanup(func() { _ = da.Close() })

		if _, err := a.Offer(ctx, "ready"); err != nil {
			t.Fatal(err)
		}
		if _, err := da.Offer(ctx, "later", time.Hour); err != nil {
			t.Fatal(err)
		}
		if err := da.Schedule(ctx, "nightly", "0 3 * * *", "tick"); err != nil {
			t.Fatal(err)
		}
		if err := a.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		sa, err := a.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sa.Ready != 1 || sa.Delayed < 1 || !sa.Paused {
			t.Errorf("stats under %s: %+v, want 1 ready, a delayed item, paused", pa, sa)
		}
		if sb.Ready != 0 || sb.Delayed != 0 || sb.Paused {
			t.Errorf("stats under %s: %+v, want nothing and not paused", pb, sb)
		}
		if _, ok, err := b.Poll(ctx, 50*time.Millisecond); err != nil || ok {
			t.Fatalf("Poll under %s: ok=%v err=%v, want nothing", pb, ok, err)
		}
		db := delayed.New(b, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = db.Close() })
		if ss, err := db.Schedules(ctx); err != nil || len(ss) != 0 {
			t.Errorf("schedules under %s: %v, %v; want none", pb, ss, err)
		}

		// A dead letter stays under its prefix.
		if err := a.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		d, err := a.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
		if n, err := a.DeadLetters().Size(ctx); err != nil || n != 1 {
			t.Errorf("dead letters under %s: %d, %v; want 1", pa, n, err)
		}
		if n, err := b.DeadLetters().Size(ctx); err != nil || n != 0 {
			t.Errorf("dead letters under %s: %d, %v; want 0", pb, n, err)
		}

		// The keys: under pa; none under the default prefix, and none of
		// pa's items under pb (b's own calls record its layout in its
		// meta hash).
		ka, _ := keys.For(pa, name)
		for _, k := range []string{ka.Delayed, ka.Items, ka.Meta, ka.Schedules, ka.DeadReady} {
			if n, err := rdb.Exists(ctx, k).Result(); err != nil || n != 1 {
				t.Errorf("key %s: exists %d, %v; want 1", k, n, err)
			}
		}
		for _, p := range []string{keys.Prefix, pb} {
			k, _ := keys.For(p, name)
			ks := []string{k.Ready, k.Delayed, k.Items, k.Seq, k.Schedules, k.DeadReady, k.Leases}
			if p == keys.Prefix {
				ks = append(ks, k.Meta)
			}
			for _, key := range ks {
				if n, err := rdb.Exists(ctx, key).Result(); err != nil || n != 0 {
					t.Errorf("key %s exists (%v)", key, err)
				}
			}
		}
		// Announced in pa's registry only (the transfer of da announces it).
		redistest.WaitFor(t, 5*time.Second, "the queue in its prefix's registry", func() bool {
			return rdb.ZScore(ctx, keys.RegistryOf(pa), name).Err() == nil
		})
		if err := rdb.ZScore(ctx, keys.Registry, name).Err(); !errors.Is(err, redis.Nil) {
			t.Errorf("queue in the default registry: %v", err)
		}
	})
}

// TestPrefixTransfer: transfer.Run with the queue's prefix moves its due
// items; without it, it moves nothing of the prefixed queue.
func TestPrefixTransfer(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	name := redistest.QueueName(t)
	redistest.Unregister(t, rdb, name)
	p := redistest.Prefix(t, rdb)
	q := blocking.New[string](rdb, name, blocking.WithPrefix(p))
	t.Cleanup(func() { _ = q.Close() })
	// A producer without a transfer of its own: a delayed queue that
	// does not transfer.
	dq := delayed.New(q, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close() })
	if _, err := dq.Offer(ctx, "due", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 2)
	go func() { done <- transfer.Run(ctx, rdb, []string{name}) }() // the default prefix: not this queue
	time.Sleep(200 * time.Millisecond)
	if st, err := q.Stats(ctx); err != nil || st.Ready != 0 {
		t.Fatalf("transferred by a transfer of another prefix: %+v, %v", st, err)
	}
	go func() { done <- transfer.Run(ctx, rdb, []string{name}, transfer.WithPrefix(p)) }()
	v, ok, err := q.Poll(ctx, 10*time.Second)
	if err != nil || !ok || v != "due" {
		t.Fatalf("Poll: %q, %v, %v; want the due item", v, ok, err)
	}
	cancel()
	for range 2 {
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
	}
}

// TestPrefixInvalid: a prefix that is empty, too long, or holds braces,
// whitespace or control characters is ErrInvalidQueue everywhere.
func TestPrefixInvalid(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	for _, p := range []string{"", "a{b", "a}b", "a b", "tab\there", "nl\n", "x\x00", ":lead", "trail:", string(make([]byte, 65)), "\xff"} {
		q := blocking.New[string](rdb, "q", blocking.WithPrefix(p))
		if _, err := q.Offer(ctx, "v"); !errors.Is(err, blocking.ErrInvalidQueue) {
			t.Errorf("Offer with prefix %q: %v, want ErrInvalidQueue", p, err)
		}
		_ = q.Close()
		if err := transfer.Run(ctx, rdb, []string{"q"}, transfer.WithPrefix(p)); !errors.Is(err, blocking.ErrInvalidQueue) {
			t.Errorf("transfer.Run with prefix %q: %v, want ErrInvalidQueue", p, err)
		}
	}
	q := blocking.New[string](rdb, "q", blocking.WithPrefix("app.v2-staging_1"))
	defer q.Close()
	if _, err := q.Offer(ctx, "v"); err != nil {
		t.Errorf("Offer with a good prefix: %v", err)
	}
}
