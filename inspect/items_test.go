package inspect_test

import (
	"context"
	"maps"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// slack is how far a time read back may be from the server clock readings
// around the call that set it (times are stored to the millisecond).
const slack = time.Second

func TestItemsInEveryState(t *testing.T) {
	codecs := []struct {
		name string
		opts []blocking.Option
		num  func(int) any
	}{
		{"msgpack", nil, func(n int) any { return int64(n) }},
		{"json", []blocking.Option{blocking.WithCodec(codec.JSON())}, func(n int) any { return float64(n) }},
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
				ctx := context.Background()
				f := populate(t, rdb, c.opts...)
				in := inspect.New(rdb)
				if got := countsOf(t, in, f.name); got != (counts{1, 1, 1, 1, 1}) {
					t.Fatalf("counts = %v", got)
				}
				for _, w := range fixtureItems {
					items, err := in.List(ctx, f.name, w.state, 0, 10)
					if err != nil {
						t.Fatalf("List(%s): %v", w.state, err)
					}
					if len(items) != 1 {
						t.Fatalf("List(%s) = %d items: %+v", w.state, len(items), items)
					}
					it := items[0]
					checkItem(t, f, it, w.state, w.id, w.attempt, w.headers, decoded(w.id, c.num))
					got, err := in.Get(ctx, f.name, w.id)
					if err != nil {
						t.Fatalf("Get(%s): %v", w.id, err)
					}
					if !reflect.DeepEqual(got, it) {
						t.Errorf("Get(%s) = %+v\nList gave %+v", w.id, got, it)
					}
				}
			})
		})
	}
}

// checkItem checks an item of the fixture.
func checkItem(t *testing.T, f *fixture, it inspect.Item, st inspect.State, id string, attempt int, headers map[string]string, value any) {
	t.Helper()
	if it.ID != id || it.State != st || it.Attempt != attempt {
		t.Errorf("%s: ID %q, State %s, Attempt %d; want %q, %s, %d", id, it.ID, it.State, it.Attempt, id, st, attempt)
	}
	got := maps.Clone(it.Headers)
	if headers["redelay-dead-at"] == "*" {
		if !within(it.DeadAt, f.start, f.end, slack) || got["redelay-dead-at"] != strconv.FormatInt(it.DeadAt.UnixMilli(), 10) {
			t.Errorf("%s: DeadAt %v (header %q) not within %v..%v", id, it.DeadAt, got["redelay-dead-at"], f.start, f.end)
		}
		got["redelay-dead-at"] = "*"
	} else if !it.DeadAt.IsZero() {
		t.Errorf("%s: DeadAt %v, want none", id, it.DeadAt)
	}
	if len(got) != len(headers) || (len(headers) > 0 && !reflect.DeepEqual(got, headers)) {
		t.Errorf("%s: Headers %v, want %v", id, it.Headers, headers)
	}
	if it.DecodeError != "" || len(it.Payload) == 0 {
		t.Errorf("%s: DecodeError %q, Payload %d bytes", id, it.DecodeError, len(it.Payload))
	}
	if !reflect.DeepEqual(it.Value, value) {
		t.Errorf("%s: Value %#v\nwant %#v", id, it.Value, value)
	}
	if !within(it.EnqueuedAt, f.start, f.end, slack) {
		t.Errorf("%s: EnqueuedAt %v not within %v..%v", id, it.EnqueuedAt, f.start, f.end)
	}
	due := time.Duration(0)
	if st == inspect.Delayed || st == inspect.Retry {
		due = time.Hour
	}
	if !within(it.DueAt, f.start.Add(due), f.end.Add(due), slack) {
		t.Errorf("%s: DueAt %v not within %v..%v", id, it.DueAt, f.start.Add(due), f.end.Add(due))
	}
	if st != inspect.Inflight {
		if !it.LeaseDeadline.IsZero() || it.Expired {
			t.Errorf("%s: LeaseDeadline %v, Expired %v", id, it.LeaseDeadline, it.Expired)
		}
		return
	}
	vis := 30 * time.Second // the default visibility timeout
	if !within(it.LeaseDeadline, f.start.Add(vis), f.end.Add(vis), slack) || it.Expired {
		t.Errorf("%s: LeaseDeadline %v (want about %v), Expired %v", id, it.LeaseDeadline, f.end.Add(vis), it.Expired)
	}
}

// An in-flight item whose lease passed while no process consumes the
// queue is shown Expired; items being handed to a consumer (the claimed
// list) follow the leased ones, with no lease deadline.
func TestInflightExpiredAndClaimed(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(2*time.Second))
		t.Cleanup(func() { _ = q.Close() })
		for _, id := range []string{"a", "b", "c"} {
			if _, err := q.Offer(ctx, "value "+id, blocking.WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		if d, err := q.Receive(ctx); err != nil || d.ID != "a" {
			t.Fatalf("Receive = %v, %v", d, err)
		}
		// Nothing reclaims the lease once the only consuming queue is
		// closed.
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		// A consumer that claimed "b" and lost the reply.
		k := redistest.KeysOf(name)
		if err := rdb.LMove(ctx, k.Ready, k.Claimed, "RIGHT", "LEFT").Err(); err != nil {
			t.Fatal(err)
		}
		in := inspect.New(rdb)
		items, err := in.List(ctx, name, inspect.Inflight, 0, 10)
		if err != nil || len(items) != 2 {
			t.Fatalf("List = %+v, %v", items, err)
		}
		a, b := items[0], items[1]
		if a.ID != "a" || a.LeaseDeadline.IsZero() || a.Attempt != 1 || b.ID != "b" || !b.LeaseDeadline.IsZero() || b.Attempt != 1 || b.Expired {
			t.Fatalf("List = %+v", items)
		}
		for _, p := range []struct {
			offset, limit int
			want          []string
		}{{0, 1, []string{"a"}}, {1, 1, []string{"b"}}, {1, 5, []string{"b"}}, {2, 5, nil}, {0, 2, []string{"a", "b"}}} {
			got, err := in.List(ctx, name, inspect.Inflight, p.offset, p.limit)
			if err != nil || len(got) != len(p.want) {
				t.Fatalf("List(%d, %d) = %+v, %v", p.offset, p.limit, got, err)
			}
			for i := range got {
				if got[i].ID != p.want[i] {
					t.Fatalf("List(%d, %d) = %+v", p.offset, p.limit, got)
				}
			}
		}
		if it, err := in.Get(ctx, name, "b"); err != nil || it.State != inspect.Inflight || !it.LeaseDeadline.IsZero() {
			t.Fatalf("Get(b) = %+v, %v", it, err)
		}
		redistest.WaitFor(t, 15*time.Second, "the lease of a to show expired", func() bool {
			it, err := in.Get(ctx, name, "a")
			return err == nil && it.Expired
		})
		items, err = in.List(ctx, name, inspect.Inflight, 0, 10)
		if err != nil || len(items) != 2 || !items[0].Expired || items[1].Expired {
			t.Fatalf("List after expiry = %+v, %v", items, err)
		}
		if got := countsOf(t, in, name); got != (counts{0, 0, 1, 2, 0}) {
			t.Fatalf("counts = %v", got)
		}
		// A claimed item is deleted once leased; this one never will be.
		wantNotFound(t, "Delete(b)", in.Delete(ctx, name, "b"), `item "b" is being handed to a consumer`)
		wantNotFound(t, "Promote(b)", in.Promote(ctx, name, "b"), `item "b" is inflight, not delayed or retry`)
		if err := in.Delete(ctx, name, "a"); err != nil {
			t.Fatal(err)
		}
		if n, err := in.Purge(ctx, name, inspect.Inflight); err != nil || n != 1 {
			t.Fatalf("Purge(inflight) = %d, %v", n, err)
		}
		if got := countsOf(t, in, name); got != (counts{0, 0, 1, 0, 0}) {
			t.Fatalf("counts after Purge = %v", got)
		}
	})
}

// An item that expired (blocking.WithTTL) is a dead letter like any
// other: listed without a deadline, and requeued without expiring again
// (before: listed with its deadline, and a Requeue sent it back to the
// dead letters at its next receive).
func TestExpiredDeadLetterRequeued(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		for _, id := range []string{"x", "y"} {
			if _, err := q.Offer(ctx, id, blocking.WithID(id), blocking.WithTTL(20*time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(100 * time.Millisecond) // the deadlines pass
		in := inspect.New(rdb)
		redistest.WaitFor(t, 10*time.Second, "both items expired", func() bool {
			if v, ok, err := q.Poll(ctx, 10*time.Millisecond); err != nil || ok {
				t.Fatalf("Poll = %q, %v, %v; want nothing", v, ok, err)
			}
			st, err := in.Stats(ctx, name)
			return err == nil && st.Dead == 2
		})
		items, err := in.List(ctx, name, inspect.Dead, 0, 10)
		if err != nil || len(items) != 2 {
			t.Fatalf("List(Dead) = %+v, %v", items, err)
		}
		for _, it := range items {
			if it.Headers[blocking.HeaderError] != "expired" || !it.Deadline.IsZero() {
				t.Errorf("dead letter %s: error %q, deadline %v; want expired, no deadline", it.ID, it.Headers[blocking.HeaderError], it.Deadline)
			}
		}
		if err := in.Requeue(ctx, name, "x"); err != nil {
			t.Fatal(err)
		}
		if n, err := in.RequeueAll(ctx, name); err != nil || n != 1 {
			t.Fatalf("RequeueAll = %d, %v", n, err)
		}
		var got []string
		for range 2 {
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			d, err := q.Receive(rctx)
			cancel()
			if err != nil {
				st, _ := in.Stats(ctx, name)
				t.Fatalf("Receive of the requeued items = %v (Stats %+v; received %q)", err, st, got)
			}
			got = append(got, d.ID)
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if st, err := in.Stats(ctx, name); err != nil || st.Dead != 0 || st.Ready != 0 {
			t.Fatalf("Stats after = %+v, %v (received %q)", st, err, got)
		}
	})
}
