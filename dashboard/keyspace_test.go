package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// The dashboard never uses KEYS or SCAN, as the inspector it reads
// through does not: not in any page, the JSON the script polls, nor an
// action that reads the server's clock itself (its client's hook sees
// every command it sends; the servers' command statistics count those
// scripts run).
func TestNoKeyspaceScan(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		log := &redistest.CommandLog{}
		client := redistest.NewClientLike(t, rdb)
		client.AddHook(log)
		b := newBrowser(t, dashboard.New(client), "")
		q := url.QueryEscape(f.name)
		pages := []string{"./", "api/overview", "api/overview?q=" + q, "api/history", "api/history?q=" + q, "queue?q=" + q,
			"queue?find=o-&q=" + q, "schedules?q=" + q, "purge?state=ready&q=" + q, "consumers", "redis"}
		for _, st := range inspect.States() {
			pages = append(pages, "queue?state="+string(st)+"&q="+q, "item?id=o-"+string(st)+"&q="+q)
		}

		before := redistest.ReadCommandStats(t, rdb)
		check := func(what string) {
			t.Helper()
			sent := log.Take()
			// The Redis page's INFO goes to a Cluster's masters through
			// their own clients, which the hook does not see; the servers'
			// statistics below count it.
			if _, cluster := rdb.(*redis.ClusterClient); len(sent) == 0 && !(cluster && what == "redis") {
				t.Fatalf("%s: no command recorded", what)
			}
			for _, name := range sent {
				if redistest.ScansKeyspace(name) {
					t.Errorf("%s sent %s: %q", what, name, sent)
				}
			}
		}
		var p page
		for _, ref := range pages {
			p = b.get(ref)
			wantStatus(t, p, http.StatusOK)
			check(ref)
		}
		p = b.get("item?id=o-retry&q=" + q)
		log.Take()
		p = b.followRedirect(b.submit(p, p.body, "action-reschedule", url.Values{"due": {"10m"}}))
		wantFlash(t, p, `Rescheduled item "o-retry"`)
		check("reschedule")
		after := redistest.ReadCommandStats(t, rdb)
		if after["evalsha"].Calls <= before["evalsha"].Calls {
			t.Fatal("no script call counted: the statistics are not the servers'")
		}
		for name, st := range after {
			if n := st.Calls - before[name].Calls; redistest.ScansKeyspace(name) && n != 0 {
				t.Errorf("%s run %d times while the dashboard answered", name, n)
			}
		}
	})
}
