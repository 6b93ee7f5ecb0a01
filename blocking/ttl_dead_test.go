package blocking_test

import (
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/redistest"
)

// This file proves that a dead letter of an item with a TTL is a dead
// letter like any other: the dead-letter queue hands it out (Receive,
// Take, ReceiveBatch, Consume) instead of expiring it again into its own
// dead letters, the inspector lists it without a deadline, and Requeue,
// Redrive and RedriveID make it ready without expiring it at once.

// ttlDeadCase is one way an item with a TTL reaches the dead letters.
type ttlDeadCase struct {
	how   string // "receive", "take": expired; "nack": failed, its deadline passed later; "stored": a dead letter an older release wrote, deadline kept
	parts int    // WithPartitions; 0: none
}

// ttlDeadLetter makes the item "x" a dead letter of a new queue whose
// deadline has passed, the way c says, and returns the queue and the error
// the dead letter carries.
func ttlDeadLetter(t *testing.T, rdb redis.UniversalClient, c ttlDeadCase) (string, *blocking.Queue[string], string) {
	t.Helper()
	ctx := context.Background()
	for ttl := 500 * time.Millisecond; ; ttl *= 2 {
		name := redistest.QueueName(t)
		opts := []blocking.Option{blocking.WithMaxAttempts(1)}
		if c.parts > 0 {
			opts = append(opts, blocking.WithPartitions(c.parts))
		}
		q := blocking.New[string](rdb, name, opts...)
		t.Cleanup(func() { _ = q.Close() })
		switch c.how {
		case "receive", "take":
			// Of priority too: the dead letter keeps it.
			if _, err := q.Offer(ctx, "x-value", blocking.WithID("x"), blocking.WithTTL(20*time.Millisecond), blocking.WithPriority(3)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond) // x's deadline passes
			// The consuming call finds x expired and delivers nothing;
			// with partitions, it may look at the other partitions first.
			redistest.WaitFor(t, 10*time.Second, "x expired by a "+c.how, func() bool {
				if c.how == "take" {
					if v, ok, err := q.Poll(ctx, 50*time.Millisecond); err != nil || ok {
						t.Fatalf("Poll = %q, %v, %v; want nothing", v, ok, err)
					}
				} else {
					rctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
					d, err := q.Receive(rctx)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("Receive = %+v, %v; want nothing", d, err)
					}
				}
				st, err := q.Stats(ctx)
				return err == nil && st.Dead == 1
			})
			return name, q, "expired"
		case "nack":
			// Received within its TTL, failed on its last attempt: a dead
			// letter whose deadline passes while it waits there. A machine
			// too busy to deliver it within the TTL starts again with the
			// TTL doubled.
			offered := time.Now()
			if _, err := q.Offer(ctx, "x-value", blocking.WithID("x"), blocking.WithTTL(ttl)); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, ttl)
			d, err := q.Receive(rctx)
			cancel()
			if errors.Is(err, context.DeadlineExceeded) && ttl < 8*time.Second {
				t.Logf("the item expired before it was received (TTL %v); again with %v", ttl, 2*ttl)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Nack(ctx, 0, blocking.WithReason(errors.New("boom"))); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Until(offered.Add(ttl + 100*time.Millisecond)))
			return name, q, "boom (attempt 1 of 1)"
		case "stored":
			// A dead letter as a release that kept deadlines wrote it: its
			// deadline an hour past.
			payload, err := codec.Msgpack().Marshal("x-value")
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now()
			e := envelope.Envelope{
				ID: "x", EnqueuedAt: now.Add(-2 * time.Hour), DueAt: now.Add(-2 * time.Hour),
				Headers: map[string]string{blocking.HeaderError: "expired"},
				Ext:     map[uint64][]byte{envelope.ExtDeadline: binary.BigEndian.AppendUint64(nil, uint64(now.Add(-time.Hour).UnixMilli()))},
				Payload: payload,
			}
			k := redistest.KeysOf(name)
			if c.parts > 0 {
				t.Fatal("stored: no partitions")
			}
			if err := rdb.LPush(ctx, k.DeadReady, e.Marshal()).Err(); err != nil {
				t.Fatal(err)
			}
			return name, q, "expired"
		}
		t.Fatalf("unknown case %q", c.how)
	}
}

func TestTTLDeadLettersAreServed(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		var cases []ttlDeadCase
		for _, how := range []string{"receive", "take", "nack", "stored"} {
			cases = append(cases, ttlDeadCase{how: how})
		}
		cases = append(cases, ttlDeadCase{how: "receive", parts: 3}, ttlDeadCase{how: "take", parts: 3})
		reads := []string{"Receive", "Take", "ReceiveBatch", "Consume", "Requeue", "Redrive", "RedriveID"}
		for _, c := range cases {
			for _, read := range reads {
				label := c.how + "/" + read
				if c.parts > 0 {
					label = c.how + "-partitioned/" + read
				}
				t.Run(label, func(t *testing.T) {
					t.Parallel()
					ttlDeadRead(t, rdb, c, read)
				})
			}
		}
	})
}

// ttlDeadRead makes a dead letter as c says and reads it with read.
func ttlDeadRead(t *testing.T, rdb redis.UniversalClient, c ttlDeadCase, read string) {
	ctx := context.Background()
	name, q, why := ttlDeadLetter(t, rdb, c)
	if st, err := q.Stats(ctx); err != nil || st.Dead != 1 {
		t.Fatalf("Stats = %+v, %v; want one dead letter", st, err)
	}
	in := inspect.New(rdb)
	items, err := in.List(ctx, name, inspect.Dead, 0, 10)
	if err != nil || len(items) != 1 || items[0].ID != "x" {
		t.Fatalf("inspect List of the dead letters = %+v, %v", items, err)
	}
	if got := items[0].Headers[blocking.HeaderError]; got != why {
		t.Errorf("the dead letter's error = %q, want %q", got, why)
	}
	if dl := items[0].Deadline; !dl.IsZero() && c.how != "stored" {
		t.Errorf("the dead letter has the deadline %v; want none (it ends when the item is dead-lettered)", dl)
	}

	dead := q.DeadLetters()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var got string
	switch read {
	case "Receive":
		d, err := dead.Receive(rctx)
		if err != nil {
			ttlDeadLost(t, rdb, q, read, err)
		}
		got = d.ID
		if d.Headers[blocking.HeaderError] != why {
			t.Errorf("Delivery's error header = %q, want %q", d.Headers[blocking.HeaderError], why)
		}
		if want := map[string]int{"receive": 3, "take": 3}[c.how]; d.Priority != want {
			t.Errorf("Delivery's priority = %d, want %d", d.Priority, want)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	case "Take":
		v, ok, err := dead.Poll(rctx, 10*time.Second)
		if err != nil || !ok {
			ttlDeadLost(t, rdb, q, read, err)
		}
		got = strings.TrimSuffix(v, "-value")
	case "ReceiveBatch":
		ds, err := dead.ReceiveBatch(rctx, 10)
		if err != nil {
			ttlDeadLost(t, rdb, q, read, err)
		}
		if len(ds) != 1 {
			t.Fatalf("ReceiveBatch = %d deliveries, want 1", len(ds))
		}
		got = ds[0].ID
		if err := ds[0].Ack(ctx); err != nil {
			t.Fatal(err)
		}
	case "Consume":
		cctx, stop := context.WithCancel(rctx)
		err := dead.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			got = d.ID
			stop()
			return nil
		})
		stop()
		if got == "" {
			ttlDeadLost(t, rdb, q, read, err)
		}
	case "Requeue", "Redrive", "RedriveID":
		switch read {
		case "Requeue":
			err = in.Requeue(ctx, name, "x")
		case "Redrive":
			var n int
			n, err = q.Redrive(ctx, 0)
			if err == nil && n != 1 {
				t.Fatalf("Redrive moved %d, want 1", n)
			}
		default:
			err = q.RedriveID(ctx, "x")
		}
		if err != nil {
			t.Fatal(err)
		}
		// Ready again, with its attempts reset, and not expired at once.
		d, err := q.Receive(rctx)
		if err != nil {
			ttlDeadLost(t, rdb, q, read, err)
		}
		got = d.ID
		if d.Attempt != 1 {
			t.Errorf("the redriven item's Attempt = %d, want 1", d.Attempt)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got != "x" {
		t.Fatalf("%s delivered %q, want the dead letter x", read, got)
	}
	for _, qq := range []*blocking.Queue[string]{q, dead} {
		if st, err := qq.Stats(ctx); err != nil || st.Dead != 0 || st.Ready != 0 {
			t.Errorf("%s: Stats after = %+v, %v; want nothing dead or ready", qq.Name(), st, err)
		}
	}
}

// ttlDeadLost fails the test when read did not deliver the dead letter,
// saying where it went.
func ttlDeadLost(t *testing.T, rdb redis.UniversalClient, q *blocking.Queue[string], read string, err error) {
	t.Helper()
	ctx := context.Background()
	st, _ := q.Stats(ctx)
	dst, _ := q.DeadLetters().Stats(ctx)
	deeper, _ := q.DeadLetters().DeadLetters().Peek(ctx, 10)
	var ids []string
	for _, it := range deeper {
		ids = append(ids, it.ID+": "+it.Headers[blocking.HeaderError])
	}
	t.Fatalf("%s did not deliver the dead letter within 10 s (%v): queue Stats.Dead %d, Ready %d; dead letters' Stats.Dead %d, Ready %d; the dead letters' own dead letters %q",
		read, err, st.Dead, st.Ready, dst.Dead, dst.Ready, ids)
}
