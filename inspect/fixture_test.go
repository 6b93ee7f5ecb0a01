package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
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

// fixture is a queue holding one item in each state, by ID
// (seedtest.EveryState).
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
	{inspect.Delayed, seedtest.Delayed, 0, map[string]string{"source": "test"}},
	{inspect.Retry, seedtest.Retry, 1, map[string]string{blocking.HeaderError: "boom", "redelay-errors": `["boom"]`}},
	{inspect.Ready, seedtest.Ready, 0, map[string]string{"tenant": "acme"}},
	{inspect.Inflight, seedtest.Inflight, 1, nil},
	{inspect.Dead, seedtest.Dead, 2, map[string]string{
		blocking.HeaderError: "fatal (attempt 2 of 2)", "redelay-errors": `["first","fatal"]`,
		"redelay-attempts": "2", "redelay-dead-at": "*", // "*": any time between the fixture's start and end
	}},
}

// populate makes a queue with one item in each state (seedtest.EveryState)
// of value order(id). It returns once the queue's codec is recorded (the
// announce of its consuming process), so that values decode.
func populate(t *testing.T, rdb redis.UniversalClient, opts ...blocking.Option) *fixture {
	t.Helper()
	f := &fixture{name: redistest.QueueName(t), rdb: rdb}
	f.start = serverNow(t, rdb)
	s := seedtest.EveryState(t, rdb, f.name, order, opts...)
	f.end = serverNow(t, rdb)
	f.q, f.inflight = s.Queue, s.Inflight
	in := inspect.New(rdb)
	redistest.WaitFor(t, 10*time.Second, "the queue's codec recorded", func() bool {
		it, err := in.Get(context.Background(), f.name, seedtest.Ready)
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
