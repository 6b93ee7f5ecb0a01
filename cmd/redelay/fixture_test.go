package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// parcel is the value of the fixture's items.
type parcel struct {
	SKU  string `msgpack:"sku"`
	Qty  int    `msgpack:"qty"`
	Note string `msgpack:"note,omitempty"`
}

// fixtureDue is when the fixture's first delayed item falls due: far
// enough ahead that it never does during a test.
var fixtureDue = time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)

// fixturePrefix is the prefix of the fixture queues' names (goldenName).
const fixturePrefix = "parcels"

// fixture returns the name of a new queue holding known items, announced
// in the registry of queues:
//
//   - delayed: parcel-1 due at fixtureDue, parcel-2 an hour later with
//     priority 5, parcel-3 two days later with a header and a long note;
//   - dead: dead-1 and dead-2, each with an error;
//   - nothing ready, retried or in flight.
func fixture(t *testing.T, rdb redis.UniversalClient) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := goldenName(fixturePrefix)
	q := blocking.New[parcel](rdb, name, blocking.WithMaxAttempts(1))
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close() })
	offers := []struct {
		v    parcel
		due  time.Time
		opts []delayed.OfferOption
	}{
		{parcel{SKU: "sku-1", Qty: 2, Note: "fragile"}, fixtureDue, []delayed.OfferOption{delayed.WithID("parcel-1")}},
		{parcel{SKU: "sku-2", Qty: 1}, fixtureDue.Add(time.Hour), []delayed.OfferOption{delayed.WithID("parcel-2"), delayed.WithPriority(5)}},
		{parcel{SKU: "sku-3", Qty: 10, Note: strings.Repeat("handle with care, ", 6)}, fixtureDue.Add(48 * time.Hour),
			[]delayed.OfferOption{delayed.WithID("parcel-3"), delayed.WithHeaders(map[string]string{"tenant": "acme"})}},
	}
	for _, o := range offers {
		if _, err := dq.OfferAt(ctx, o.v, o.due, o.opts...); err != nil {
			t.Fatal(err)
		}
	}
	reasons := []string{
		"carrier: address not found",
		"carrier refused the parcel: 31 kg is over the 30 kg limit of the service",
	}
	for i, reason := range reasons {
		seedtest.DeadLetter(ctx, t, q, fmt.Sprintf("dead-%d", i+1), parcel{SKU: fmt.Sprintf("sku-d%d", i+1), Qty: 1}, nil, reason)
	}
	in := inspect.New(rdb)
	redistest.WaitFor(t, 10*time.Second, "the fixture in the registry, settled", func() bool {
		names, err := in.Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st, err := in.Stats(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		settled := st.NextDue.Equal(fixtureDue)
		st.NextDue, st.Eviction = time.Time{}, ""
		return slices.Contains(names, name) && settled && st == blocking.Stats{Delayed: 3, Dead: 2, Failed: 2}
	})
	return name
}
