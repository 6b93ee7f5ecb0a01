package dashboard_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
)

var reLive = regexp.MustCompile(`<body data-live="([^"]*)">`)

// Every page names the JSON its script polls: the overview every queue's
// stats, a page of one queue (or of its item, schedules or purge) that
// queue's, so that each page can tell when its figures stop being
// current; it carries the banner the script fills then, hidden. An error
// page polls nothing.
func TestLiveSource(t *testing.T) {
	rdb := redistest.Standalone(t)
	f := populate(t, rdb)
	b := newBrowser(t, dashboard.New(rdb), "")
	q := url.QueryEscape(f.name)
	one := "./api/overview?q=" + q
	for ref, want := range map[string]string{
		"./":                         "./api/overview",
		"queue?q=" + q:               one,
		"queue?state=dead&q=" + q:    one,
		"item?id=o-dead&q=" + q:      one,
		"schedules?q=" + q:           one,
		"purge?state=ready&q=" + q:   one,
		"queue?q=" + q + "-missing":  "",
		"item?id=nobody&q=" + q:      "",
		"queue?state=nothing&q=" + q: "",
	} {
		p := b.get(ref)
		m := reLive.FindStringSubmatch(p.body)
		got := ""
		if m != nil {
			got = html.UnescapeString(m[1])
		}
		if got != want {
			t.Errorf("%s: data-live %q, want %q", ref, got, want)
		}
		if want != "" {
			wantStatus(t, p, http.StatusOK)
			if !strings.Contains(p.body, `<p class="stale-banner" role="alert" data-testid="stale" hidden></p>`) {
				t.Errorf("%s: no hidden stale banner", ref)
			}
		}
	}
}
