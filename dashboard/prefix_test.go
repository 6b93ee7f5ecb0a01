package dashboard_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// TestPrefix: a dashboard given a key prefix lists and shows the queues of
// that prefix only; a bad prefix answers 500.
func TestPrefix(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	p := redistest.Prefix(t, rdb)
	q := blocking.New[string](rdb, name, blocking.WithPrefix(p))
	t.Cleanup(func() { _ = q.Close() })
	if _, _, err := q.Poll(ctx, 0); err != nil { // consumes: announces the queue
		t.Fatal(err)
	}
	for range 3 {
		if _, err := q.Offer(ctx, "v"); err != nil {
			t.Fatal(err)
		}
	}
	in := inspect.New(rdb, inspect.WithPrefix(p))
	redistest.WaitFor(t, 5*time.Second, "the queue announced", func() bool {
		names, err := in.Queues(ctx)
		return err == nil && len(names) == 1
	})

	b := newBrowser(t, dashboard.New(rdb, dashboard.WithPrefix(p)), "")
	home := b.get("./")
	if home.status != http.StatusOK || !strings.Contains(home.body, name) {
		t.Fatalf("overview under the prefix: %d, lists %s: %v", home.status, name, strings.Contains(home.body, name))
	}
	qp := b.get("queue?q=" + name + "&state=ready")
	if qp.status != http.StatusOK || strings.Count(qp.body, `data-testid="item-row"`) != 3 {
		t.Fatalf("queue page under the prefix: %d, %d rows", qp.status, strings.Count(qp.body, `data-testid="item-row"`))
	}
	plain := newBrowser(t, dashboard.New(rdb), "")
	if p := plain.get("./"); strings.Contains(p.body, name) {
		t.Errorf("the default prefix's overview lists %s", name)
	}
	if p := plain.get("queue?q=" + name); p.status != http.StatusNotFound {
		t.Errorf("the default prefix's queue page: %d, want 404", p.status)
	}
	bad := newBrowser(t, dashboard.New(rdb, dashboard.WithPrefix("a b")), "")
	if p := bad.get("./"); p.status != http.StatusInternalServerError {
		t.Errorf("a bad prefix: %d, want 500", p.status)
	}
}
