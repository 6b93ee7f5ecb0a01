package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
)

// Mounted under a prefix with http.StripPrefix, every link, asset, form
// action and redirect resolves under the prefix.
func TestMountedUnderPrefix(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		const prefix = "/admin/queues"
		// The application's server: everything below the prefix goes to the
		// dashboard.
		b := newBrowserOn(t, http.StripPrefix(prefix, dashboard.New(rdb)), prefix+"/")
		under := func(p page) {
			t.Helper()
			wantStatus(t, p, http.StatusOK)
			if !strings.HasPrefix(p.url.Path, prefix+"/") {
				t.Fatalf("left the prefix: %s", p.url)
			}
		}

		// The prefix without its slash redirects to it with the slash.
		p := b.do(http.MethodGet, b.resolve(prefix+"?x=1"), nil)
		wantStatus(t, p, http.StatusMovedPermanently)
		p = b.follow(p, p.header.Get("Location"))
		under(p)
		if p.url.Path != prefix+"/" || p.url.RawQuery != "x=1" {
			t.Fatalf("redirected to %s", p.url)
		}

		for _, asset := range []string{"dashboard.css", "dashboard.js"} {
			under(b.follow(p, "./assets/"+asset))
		}
		if !strings.Contains(p.body, `href="./assets/dashboard.css"`) || !strings.Contains(p.body, `src="./assets/dashboard.js"`) {
			t.Errorf("assets not linked relatively:\n%s", p.body)
		}
		under(b.follow(p, `./api/overview`))

		// Overview → queue → item → queue → schedules → overview.
		qp := b.follow(p, hrefOf(t, queueRow(p.body, f.name), "queue-link"))
		under(qp)
		qp = b.follow(qp, hrefOf(t, qp.body, "tab-ready"))
		under(qp)
		ip := b.follow(qp, hrefOf(t, itemRow(qp.body, "o-ready"), "item-link"))
		under(ip)
		under(b.follow(ip, hrefOf(t, ip.body, "queue-link")))
		sp := b.follow(qp, hrefOf(t, qp.body, "schedules-link"))
		under(sp)
		home := b.follow(sp, hrefOf(t, sp.body, "home-link"))
		under(home)
		if home.url.Path != prefix+"/" {
			t.Errorf("home link goes to %s", home.url)
		}

		// An action, its confirm page and its redirect.
		c := b.submit(qp, qp.body, "action-pause", nil)
		if !strings.HasPrefix(c.url.Path, prefix+"/actions/") {
			t.Errorf("action posted to %s", c.url)
		}
		under(c)
		back := b.followRedirect(b.submit(c, c.body, "confirm", nil))
		under(back)
		if back.url.Path != prefix+"/queue" || back.url.Query().Get("q") != f.name {
			t.Errorf("redirected to %s", back.url)
		}
		wantFlash(t, back, "Paused queue")

		// Error pages below the mount point link back correctly too.
		e := b.get("actions/nothing")
		wantStatus(t, e, http.StatusNotFound)
		if !strings.Contains(e.body, `href="../assets/dashboard.css"`) {
			t.Errorf("error page one level down links its style sheet wrongly:\n%s", e.body)
		}
		home = b.follow(e, hrefOf(t, e.body, "home-link"))
		if home.url.Path != prefix+"/" {
			t.Errorf("home link of an error page goes to %s", home.url)
		}
	})
}
