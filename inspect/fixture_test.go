package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// Order is the value type of the queues under test.
type Order struct {
	ID    string
	Total int
	Tags  []string
	Meta  map[string]any
}

func order(id string) Order {
	return Order{ID: id, Total: 4200 + len(id), Tags: []string{"a", id}, Meta: map[string]any{"n": 7, "neg": -3, "s": "x"}}
}

// decoded is what the inspector should decode order(id) into; num gives a
// number as the codec decodes it generically.
func decoded(id string, num func(int) any) map[string]any {
	o := order(id)
	return map[string]any{
		"ID": o.ID, "Total": num(o.Total), "Tags": []any{"a", id},
		"Meta": map[string]any{"n": num(7), "neg": num(-3), "s": "x"},
	}
}

// fixture is a queue holding one item in each state, by ID.
type fixture struct {
	name     string
	rdb      redis.UniversalClient
	q        *blocking.Queue[Order]
	inflight *blocking.Delivery[Order] // the lease of o-inflight
	start    time.Time                 // the server's clock before the first offer
	end      time.Time                 // and after the last
}

// The IDs of the fixture's items, and the headers each has.
var fixtureItems = []struct {
	state   inspect.State
	id      string
	attempt int
	headers map[string]string
}{
	{inspect.Delayed, "o-delayed", 0, map[string]string{"source": "test"}},
	{inspect.Retry, "o-retry", 1, map[string]string{blocking.HeaderError: "boom"}},
	{inspect.Ready, "o-ready", 0, map[string]string{"tenant": "acme"}},
	{inspect.Inflight, "o-inflight", 1, nil},
	{inspect.Dead, "o-dead", 0, map[string]string{blocking.HeaderError: "fatal (attempt 2 of 2)"}},
}

// populate makes a queue with one item in each state: o-dead failed twice
// (max attempts 2), o-retry failed once and is retried in an hour,
// o-inflight is leased (30 s), o-ready waits, o-delayed is due in an hour.
// It returns once the queue's codec is recorded (the announce of its
// consuming process), so that values decode.
func populate(t *testing.T, rdb redis.UniversalClient, opts ...blocking.Option) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{name: redistest.QueueName(t), rdb: rdb}
	f.q = blocking.New[Order](rdb, f.name, append([]blocking.Option{blocking.WithMaxAttempts(2)}, opts...)...)
	t.Cleanup(func() { _ = f.q.Close() })
	dq := delayed.New(f.q, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close() })
	f.start = serverNow(t, rdb)
	offer := func(id string, h map[string]string) {
		t.Helper()
		if _, err := f.q.Offer(ctx, order(id), blocking.WithID(id), blocking.WithHeaders(h)); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(id string) *blocking.Delivery[Order] {
		t.Helper()
		d, err := f.q.Receive(ctx)
		if err != nil || d.ID != id {
			t.Fatalf("Receive = %v, %v; want %s", d, err, id)
		}
		return d
	}
	nack := func(d *blocking.Delivery[Order], delay time.Duration, why string) {
		t.Helper()
		if err := d.Nack(ctx, delay, blocking.WithReason(errors.New(why))); err != nil {
			t.Fatal(err)
		}
	}
	offer("o-dead", nil)
	nack(receive("o-dead"), 0, "first") // ready again at once
	nack(receive("o-dead"), 0, "fatal") // its last attempt: dead
	offer("o-retry", nil)
	nack(receive("o-retry"), time.Hour, "boom")
	offer("o-inflight", nil)
	f.inflight = receive("o-inflight")
	offer("o-ready", map[string]string{"tenant": "acme"})
	if _, err := dq.Offer(ctx, order("o-delayed"), time.Hour, delayed.WithID("o-delayed"),
		delayed.WithHeaders(map[string]string{"source": "test"})); err != nil {
		t.Fatal(err)
	}
	f.end = serverNow(t, rdb)
	in := inspect.New(rdb)
	redistest.WaitFor(t, 10*time.Second, "the queue's codec recorded", func() bool {
		it, err := in.Get(ctx, f.name, "o-ready")
		return err == nil && it.DecodeError == ""
	})
	return f
}

// serverNow reads the Redis server's clock.
func serverNow(t *testing.T, rdb redis.UniversalClient) time.Time {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now
}

// counts are a queue's counts by state, in the order of inspect.States.
type counts [5]int64

func countsOf(t *testing.T, in *inspect.Inspector, name string) counts {
	t.Helper()
	st, err := in.Stats(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return counts{st.Delayed, st.Retry, st.Ready, st.Inflight, st.Dead}
}

// within reports whether got is in [from-slack, to+slack].
func within(got, from, to time.Time, slack time.Duration) bool {
	return !got.Before(from.Add(-slack)) && !got.After(to.Add(slack))
}
