package delayed_test

// Tests of the defects fixed before v1 (each failed on the code before its
// fix; docs/hardening.md lists what each showed before and after).

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/redistest"
)

// Due times beyond what a sorted-set score holds exactly (2255), before
// 1970, or whose Unix microseconds overflow int64 (the year 294247 and
// after), are refused (before: the year 586,560 was accepted and delivered
// at once, 587,000 due in 2445).
func TestOfferAtOutOfRange(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q, dq := open[string](t, rdb, redistest.QueueName(t))
	for _, due := range []time.Time{
		time.Date(586000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(586560, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(587000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2256, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC),
		{},
	} {
		if id, err := dq.OfferAt(ctx, "far", due); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("OfferAt(%v) = %q, %v; want ErrInvalidArgument", due, id, err)
		}
	}
	for _, d := range []time.Duration{-time.Nanosecond, 250 * 365 * 24 * time.Hour} {
		if id, err := dq.Offer(ctx, "far", d); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("Offer(%v) = %q, %v; want ErrInvalidArgument", d, id, err)
		}
	}
	if _, err := dq.OfferAt(ctx, "in 2200", time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("a due time in range: %v", err)
	}
	if n, _ := dq.Size(ctx); n != 1 {
		t.Fatalf("pending = %d, want only the one in range", n)
	}
	if n, _ := q.Size(ctx); n != 0 {
		t.Fatalf("ready = %d: a refused offer was delivered", n)
	}
}

// A consumer's retry is the blocking queue's, not a pending item of the
// delayed queue: Size does not count it, Clear keeps it, Remove does not
// cancel it, and an Offer with its ID is no duplicate (before: all four
// saw it as a delayed item).
func TestRetriesAreNotDelayedItems(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	setup := func(t *testing.T) (*blocking.Queue[string], *delayed.Queue[string], string) {
		t.Helper()
		name := redistest.QueueName(t)
		q, dq := open[string](t, rdb, name)
		if _, err := dq.Offer(ctx, "job", 0, delayed.WithID("order-1")); err != nil {
			t.Fatal(err)
		}
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		d, err := q.Receive(rctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, time.Hour); err != nil {
			t.Fatal(err)
		}
		return q, dq, name
	}
	retryPending := func(name string) bool {
		return rdb.ZCard(ctx, redistest.KeysOf(name).Retry).Val() == 1
	}
	t.Run("Size", func(t *testing.T) {
		_, dq, _ := setup(t)
		if n, err := dq.Size(ctx); err != nil || n != 0 {
			t.Fatalf("Size = %d, %v; want 0", n, err)
		}
	})
	t.Run("Clear", func(t *testing.T) {
		_, dq, name := setup(t)
		if err := dq.Clear(ctx); err != nil {
			t.Fatal(err)
		}
		if !retryPending(name) {
			t.Fatal("Clear dropped the retry")
		}
	})
	t.Run("Remove", func(t *testing.T) {
		_, dq, name := setup(t)
		if ok, err := dq.Remove(ctx, "order-1"); err != nil || ok || !retryPending(name) {
			t.Fatalf("Remove = %v, %v; retry pending %v", ok, err, retryPending(name))
		}
	})
	t.Run("WithID", func(t *testing.T) {
		_, dq, name := setup(t)
		if _, err := dq.Offer(ctx, "new job", time.Minute, delayed.WithID("order-1")); err != nil {
			t.Fatalf("Offer(WithID) with only a retry of that ID pending: %v", err)
		}
		if n, _ := dq.Size(ctx); n != 1 || !retryPending(name) {
			t.Fatalf("pending %d, retry %v", n, retryPending(name))
		}
	})
}

// No user ID can collide with a retry: an ID shaped like the field the
// old nack script used for a retry ("x#" + lease token) is an ID like any
// other (before: the retry overwrote that item, which was lost, and the
// retry was delivered twice).
func TestUserIDLikeRetryField(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q, dq := open[string](t, rdb, name)
	k := redistest.KeysOf(name)
	if _, err := dq.Offer(ctx, "a", 0, delayed.WithID("x")); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	da, err := q.Receive(rctx)
	if err != nil {
		t.Fatal(err)
	}
	tokens := rdb.HKeys(ctx, k.Inflight).Val()
	if len(tokens) != 1 {
		t.Fatalf("leases %q", tokens)
	}
	lookalike := "x#" + tokens[0]
	if _, err := dq.Offer(ctx, "b", time.Hour, delayed.WithID("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := dq.Offer(ctx, "c", 300*time.Millisecond, delayed.WithID(lookalike)); err != nil {
		t.Fatal(err)
	}
	if err := da.Nack(ctx, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if n, m := rdb.ZCard(ctx, k.Delayed).Val(), rdb.HLen(ctx, k.Items).Val(); n != 2 || m != 2 {
		t.Fatalf("%d pending members, %d item fields; want b and c", n, m)
	}
	count := map[string]int{}
	for {
		v, ok, err := q.Poll(ctx, 1500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		count[v]++
	}
	if count["a"] != 1 || count["c"] != 1 || len(count) != 2 {
		t.Fatalf("delivered %v, want the retry a and the item c once each", count)
	}
}

// Offer, OfferBatch, Update and Schedule of a cyclic value return an error
// wrapping codec.ErrUnsupportedValue and store nothing (before: msgpack
// recursed until the stack overflowed and the process died).
func TestOfferCyclicValue(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q, dq := open[map[string]any](t, rdb, redistest.QueueName(t))
	cyclic := map[string]any{"k": "v"}
	cyclic["self"] = cyclic
	if id, err := dq.Offer(ctx, cyclic, time.Minute); !errors.Is(err, codec.ErrUnsupportedValue) || id != "" {
		t.Errorf("Offer = %q, %v; want ErrUnsupportedValue", id, err)
	}
	if ids, err := dq.OfferBatch(ctx, []map[string]any{{"ok": 1}, cyclic}, time.Minute); !errors.Is(err, codec.ErrUnsupportedValue) {
		t.Errorf("OfferBatch = %v, %v; want ErrUnsupportedValue", ids, err)
	}
	if err := dq.Schedule(ctx, "tick", "@every 1h", cyclic); !errors.Is(err, codec.ErrUnsupportedValue) {
		t.Errorf("Schedule = %v; want ErrUnsupportedValue", err)
	}
	if n, err := dq.Size(ctx); err != nil || n != 0 {
		t.Fatalf("pending = %d (%v): a refused offer was stored", n, err)
	}
	if s, err := dq.Schedules(ctx); err != nil || len(s) != 0 {
		t.Fatalf("schedules = %v (%v): a refused schedule was stored", s, err)
	}
	id, err := dq.Offer(ctx, map[string]any{"k": "v"}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := dq.Update(ctx, id, cyclic); !errors.Is(err, codec.ErrUnsupportedValue) {
		t.Errorf("Update = %v; want ErrUnsupportedValue", err)
	}
	if n, err := dq.Size(ctx); err != nil || n != 1 {
		t.Fatalf("pending = %d (%v), want the one item", n, err)
	}
	if n, _ := q.Size(ctx); n != 0 {
		t.Fatalf("ready = %d: a refused offer was delivered", n)
	}
}

// Stored data that this release cannot read reaches the caller as an
// error that errors.Is matches with a public sentinel, and that still
// names the problem: ErrCorrupt for bytes that are no envelope, a
// malformed envelope, an envelope of a newer version and a malformed
// schedule record; ErrDecode for a sound envelope whose value the codec
// refuses (before: they wrapped only sentinels of an internal package,
// or nothing).
func TestCorruptDataIsErrCorrupt(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[order](rdb, name)
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		k := redistest.KeysOf(name)
		due := time.Now().Add(time.Hour)
		put := func(id string, env []byte) {
			t.Helper()
			seq := "\x00\x00\x00\x00\x00\x01"
			if err := rdb.HSet(ctx, k.Items, id, seq+string(env)).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.ZAdd(ctx, k.Delayed, redis.Z{Score: float64(due.UnixMicro()), Member: seq + id}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		payload, err := codec.Msgpack().Marshal(order{ID: "x", Total: 1})
		if err != nil {
			t.Fatal(err)
		}
		good := (&envelope.Envelope{ID: "x", Payload: payload}).Marshal()
		newer := append([]byte{9}, good[1:]...)
		for _, c := range []struct {
			id   string
			env  []byte
			text string
		}{
			{"none", []byte("garbage that is not an envelope"), "not an envelope"},
			{"malformed", append(append([]byte{}, good[:envelope.HeaderLen]...), 0x7f, 'b'), "corrupt"},
			{"newer", newer, "unknown version"},
		} {
			put(c.id, c.env)
			_, err := dq.Get(ctx, c.id)
			if !errors.Is(err, delayed.ErrCorrupt) || !errors.Is(err, blocking.ErrCorrupt) ||
				errors.Is(err, delayed.ErrDecode) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("Get of %s = %v; want ErrCorrupt saying %q", c.id, err, c.text)
			}
			err = dq.Update(ctx, c.id, order{Total: 2})
			if !errors.Is(err, delayed.ErrCorrupt) || !strings.Contains(err.Error(), c.id) {
				t.Errorf("Update of %s = %v; want ErrCorrupt naming the item", c.id, err)
			}
		}

		// A sound envelope whose value is not an order: ErrDecode, with
		// the codec's error.
		str, err := codec.Msgpack().Marshal("a string, not an order")
		if err != nil {
			t.Fatal(err)
		}
		put("wrongtype", (&envelope.Envelope{ID: "wrongtype", Payload: str}).Marshal())
		_, err = dq.Get(ctx, "wrongtype")
		if !errors.Is(err, delayed.ErrDecode) || errors.Is(err, delayed.ErrCorrupt) ||
			!strings.Contains(err.Error(), "decode with msgpack codec") {
			t.Errorf("Get of a value of another type = %v; want ErrDecode", err)
		}

		// A schedule record that is no JSON.
		if err := rdb.HSet(ctx, k.Schedules, "broken", "{not json").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Schedules(ctx); !errors.Is(err, delayed.ErrCorrupt) || !strings.Contains(err.Error(), "broken") {
			t.Errorf("Schedules with a malformed record = %v; want ErrCorrupt naming it", err)
		}
		// Schedule replaces it (B9 in docs/hardening.md: nothing else in
		// the API could repair it).
		if err := dq.Schedule(ctx, "broken", "0 3 * * *", order{}); err != nil {
			t.Errorf("Schedule over a malformed record = %v", err)
		}
		if infos, err := dq.Schedules(ctx); err != nil || len(infos) != 1 || infos[0].Spec != "0 3 * * *" {
			t.Errorf("Schedules after replacing the malformed record = %+v, %v", infos, err)
		}
	})
}
