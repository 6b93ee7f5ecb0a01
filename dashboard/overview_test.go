package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// The overview lists a populated queue with its count in each state, a
// link to its page, and the paused badge only while it is paused; the
// JSON endpoint gives the same counts.
func TestOverview(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("./")
		wantStatus(t, p, http.StatusOK)
		row := queueRow(p.body, f.name)
		if row == "" {
			t.Fatalf("no row for %s:\n%s", f.name, p.body)
		}
		for _, st := range inspect.States() {
			if got, ok := cell(row, "count-"+string(st)); !ok || got != "1" {
				t.Errorf("count-%s = %q, %v; want 1", st, got, ok)
			}
		}
		if strings.Contains(row, `data-testid="paused"`) {
			t.Error("paused badge on a running queue")
		}
		if got := hrefOf(t, row, "queue-link"); got != "./queue?q="+url.QueryEscape(f.name) {
			t.Errorf("queue link %q", got)
		}
		if !strings.Contains(row, `data-testid="action-pause"`) {
			t.Error("no pause button")
		}

		if err := f.in.Pause(context.Background(), f.name); err != nil {
			t.Fatal(err)
		}
		row = queueRow(b.get("./").body, f.name)
		if !strings.Contains(row, `data-testid="paused"`) || !strings.Contains(row, `data-testid="action-resume"`) {
			t.Errorf("paused queue's row:\n%s", row)
		}

		// The JSON, of every queue and of one.
		for _, ref := range []string{"api/overview", "api/overview?q=" + url.QueryEscape(f.name)} {
			p = b.get(ref)
			wantStatus(t, p, http.StatusOK)
			if ct := p.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type %q", ref, ct)
			}
			var out struct {
				Queues []struct {
					Name                                  string
					Delayed, Retry, Ready, Inflight, Dead int64
					Paused                                bool
					NextDue                               string `json:"next_due"`
				}
			}
			if err := json.Unmarshal([]byte(p.body), &out); err != nil {
				t.Fatalf("%s: %v: %s", ref, err, p.body)
			}
			found := false
			for _, q := range out.Queues {
				if q.Name != f.name {
					continue
				}
				found = true
				if q.Delayed != 1 || q.Retry != 1 || q.Ready != 1 || q.Inflight != 1 || q.Dead != 1 || !q.Paused || q.NextDue == "" {
					t.Errorf("%s: %+v", ref, q)
				}
			}
			if !found {
				t.Errorf("%s: no %s in %s", ref, f.name, p.body)
			}
		}
		p = b.get("api/overview?q=" + url.QueryEscape(f.name+"-missing"))
		wantStatus(t, p, http.StatusNotFound)
		if !strings.Contains(p.body, `"error"`) {
			t.Errorf("404 JSON: %s", p.body)
		}
	})
}

// roundTrips counts the commands and pipelines a client sends, but not
// the handshake of a new connection (HELLO, CLIENT SETINFO): the pool opens
// connections as it needs them.
type roundTrips struct {
	n   atomic.Int64
	mu  sync.Mutex
	log []string
}

func (h *roundTrips) note(cmds ...redis.Cmder) {
	for _, c := range cmds {
		switch c.Name() {
		case "hello", "client", "auth", "select":
			continue
		}
		h.mu.Lock()
		h.log = append(h.log, cmds[0].Name())
		h.mu.Unlock()
		h.n.Add(1)
		return
	}
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.note(cmds...)
		return next(ctx, cmds)
	}
}

// The overview of 50 queues, page and JSON, takes a bounded number of
// round trips (the list of queues, then their stats pipelined), not one
// per queue.
func TestOverviewRoundTrips(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		prefix := redistest.Prefix(t, rdb)
		var names []string
		for i := range 50 {
			names = append(names, fmt.Sprintf("q-%02d", i))
		}
		// Registered as a consuming process would register them.
		for _, n := range names {
			if err := rdb.ZAdd(ctx, keys.RegistryOf(prefix), redis.Z{Score: 1, Member: n}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := blocking.New[int](rdb, names[7], blocking.WithPrefix(prefix)).Offer(ctx, 7); err != nil {
			t.Fatal(err)
		}
		partitioned := blocking.New[int](rdb, names[9], blocking.WithPrefix(prefix), blocking.WithPartitions(4))
		if _, err := partitioned.Offer(ctx, 9); err != nil {
			t.Fatal(err)
		}
		all, err := inspect.New(rdb, inspect.WithPrefix(prefix)).Queues(ctx)
		if err != nil {
			t.Fatal(err)
		}
		counting := redistest.NewClientLike(t, rdb)
		trips := &roundTrips{}
		counting.AddHook(trips)
		b := newBrowser(t, dashboard.New(counting, dashboard.WithPrefix(prefix)), "")
		// The registry, the stats pipelined, the partitioned queue's
		// other partitions; on a Cluster the pipeline goes once to each
		// of the three masters.
		limit := int64(3)
		if _, ok := rdb.(*redis.ClusterClient); ok {
			limit = 1 + 2*3
		}
		wantStatus(t, b.get("./"), http.StatusOK) // loads the script on every node
		var p page
		for _, ref := range []string{"api/overview", "./"} {
			trips.mu.Lock()
			trips.n.Store(0)
			trips.log = nil
			trips.mu.Unlock()
			p = b.get(ref)
			wantStatus(t, p, http.StatusOK)
			if got := trips.n.Load(); got > limit {
				t.Errorf("%s of %d queues: %d round trips, want at most %d: %q", ref, len(all), got, limit, trips.log)
			}
		}
		rows := strings.Count(p.body, `data-testid="queue-row"`)
		if rows < len(all) {
			t.Fatalf("%d rows for %d queues", rows, len(all))
		}
		for i, n := range names {
			row := queueRow(p.body, n)
			want := "0"
			if i == 7 || i == 9 {
				want = "1"
			}
			if got, _ := cell(row, "count-ready"); got != want {
				t.Errorf("%s: ready %q, want %s", n, got, want)
			}
		}
	})
}
