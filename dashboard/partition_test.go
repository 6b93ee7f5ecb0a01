package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// TestPartitionedOverview: a queue with partitions is one row of the
// overview, its counts summed over the partitions.
func TestPartitionedOverview(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		// Its rows cost a round trip per partition: gone from the overview
		// of TestOverviewRoundTrips when go test runs again.
		redistest.Unregister(t, rdb, name)
		q := blocking.New[Order](rdb, name, blocking.WithPartitions(8))
		t.Cleanup(func() { _ = q.Close() })
		for i := range 20 {
			if _, err := q.Offer(ctx, Order{ID: strconv.Itoa(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := q.Receive(ctx); err != nil { // announces the queue
			t.Fatal(err)
		}
		(&fixture{name: name, rdb: rdb, q: q, in: inspect.New(rdb)}).waitAnnounced(t)
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("api/overview")
		wantStatus(t, p, http.StatusOK)
		var out struct {
			Queues []struct {
				Name            string
				Ready, Inflight int64
			}
		}
		if err := json.Unmarshal([]byte(p.body), &out); err != nil {
			t.Fatal(err)
		}
		rows := 0
		for _, r := range out.Queues {
			if r.Name != name {
				continue
			}
			rows++
			if r.Ready != 19 || r.Inflight != 1 {
				t.Errorf("overview row %+v; want 19 ready, 1 in flight", r)
			}
		}
		if rows != 1 {
			t.Fatalf("%d rows for %s in %s", rows, name, p.body)
		}
	})
}
