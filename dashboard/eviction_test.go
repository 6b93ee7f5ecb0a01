package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
)

// Every page, the error pages included, carries a banner naming the
// policy while the Redis server may evict keys, and none under
// noeviction.
func TestEvictionBanner(t *testing.T) {
	redistest.ForEachDedicated(t, func(t *testing.T, d *redistest.Dedicated) {
		for _, policy := range []string{"volatile-lru", "noeviction"} {
			t.Run(policy, func(t *testing.T) {
				d.ConfigSetOne(t, "maxmemory-policy", policy)
				rdb := d.Client()
				name := redistest.QueueName(t)
				q := blocking.New[string](rdb, name)
				t.Cleanup(func() { _ = q.Close() })
				if _, _, err := q.Poll(context.Background(), 0); err != nil { // announces it
					t.Fatal(err)
				}
				b := newBrowser(t, dashboard.New(rdb), "")
				qn := url.QueryEscape(name)
				for ref, status := range map[string]int{
					"./":                             http.StatusOK,
					"queue?q=" + qn:                  http.StatusOK,
					"queue?q=" + qn + "&state=ready": http.StatusOK,
					"schedules?q=" + qn:              http.StatusOK,
					"item?q=" + qn + "&id=missing":   http.StatusNotFound,
					"no-such-page":                   http.StatusNotFound,
				} {
					p := b.get(ref)
					wantStatus(t, p, status)
					banner := strings.Contains(p.body, `data-testid="eviction"`) &&
						strings.Contains(p.body, "maxmemory-policy <code>"+policy+"</code>")
					if banner != (policy != "noeviction") {
						t.Fatalf("%s under %s: banner %v:\n%s", ref, policy, banner, p.body)
					}
				}
			})
		}
	})
}
