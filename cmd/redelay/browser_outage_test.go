package main

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/redelay/redelay/internal/redistest"
)

// staleJS is a script giving what a page says of its figures: the stale
// banner's text and whether it is at the top of the window, whether the
// figures are greyed, and how many action controls are enabled, as in
// "banner=(none) greyed=false enabled=7".
const staleJS = `(() => {
	const b = document.querySelector('[data-testid="stale"]');
	let banner = "(none)";
	if (b && !b.hidden) {
		const r = b.getBoundingClientRect();
		banner = b.textContent.trim() + (r.top === 0 && r.height > 0 && r.bottom <= innerHeight ? " [top]" : " [not at the top]");
	}
	const cell = document.querySelector('td.num, [data-live-count]');
	const greyed = !!cell && Number(getComputedStyle(cell).opacity) < 1;
	const controls = [...document.querySelectorAll('form[method="post"] button, form[method="post"] input:not([type="hidden"]), a[data-action]')];
	const enabled = controls.filter(c => !c.disabled && c.getAttribute("aria-disabled") !== "true").length;
	return "banner=" + banner + " greyed=" + greyed + " enabled=" + enabled;
})()`

// reStale matches the stale banner, at the top of the window, and
// captures the time it gives.
var reStale = regexp.MustCompile(`^banner=Redis unreachable since (\d\d:\d\d:\d\d) — figures below are from then \[top\] greyed=true enabled=0$`)

// A dashboard whose Redis server stops says so at the top of every open
// page, with the time of the first failed refresh, greys the figures and
// disables every action; once the server is back (empty: it kept no
// data), the next refresh clears all that by itself and replaces the old
// figures: a queue filled again shows its new counts, one that vanished
// is marked gone, its actions disabled. At a desktop's width and a
// phone's.
func TestBrowserOutage(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	kept := countsQueue(t, rdb)
	lost := countsQueue(t, rdb)
	base := startDashboard(t, rdb)
	browser := newBrowser(t)

	type view struct {
		what  string
		ctx   context.Context
		fresh string // staleJS before the outage
	}
	var views []view
	for _, width := range []int64{wideWidth, narrowWidth} {
		ctx := newTabAt(t, browser, width)
		open(t, ctx, base)
		waitEqual(t, ctx, "the row of "+lost, rowJS(lost), "delayed=3 retry=0 ready=2 inflight=0 dead=2 paused=false")
		// Two pause buttons and the open-a-queue form stay enabled: GET.
		views = append(views, view{fmt.Sprintf("overview at %d px", width), ctx, "banner=(none) greyed=false enabled=2"})
	}
	qctx := newTabAt(t, browser, wideWidth)
	open(t, qctx, pageURL(base, "queue", "q", lost, "state", "dead"))
	waitEqual(t, qctx, "the tabs of "+lost, tabsJS, "delayed=3 retry=0 ready=2 inflight=0 dead=2 active=dead")
	views = append(views, view{"the dead letters of " + lost, qctx, ""})
	for i, v := range views {
		if v.fresh == "" {
			views[i].fresh = evalJS[string](t, v.ctx, staleJS)
			if views[i].fresh == "banner=(none) greyed=false enabled=0" {
				t.Fatalf("%s: no action enabled before the outage", v.what)
			}
			continue
		}
		waitEqual(t, v.ctx, v.what+" before the outage", staleJS, v.fresh)
	}

	before := time.Now().Truncate(time.Second)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		since := waitMatch(t, v.ctx, v.what+" once Redis stopped", staleJS, reStale)
		at, err := time.ParseInLocation("15:04:05", since[1], time.Local)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		at = time.Date(now.Year(), now.Month(), now.Day(), at.Hour(), at.Minute(), at.Second(), 0, time.Local)
		if at.Before(before) || at.After(now) {
			t.Errorf("%s: unreachable since %s, want from %s to %s", v.what, since[1], before.Format(time.TimeOnly), now.Format(time.TimeOnly))
		}
	}
	// The figures stay those of before, greyed.
	waitEqual(t, views[0].ctx, "the row of "+lost+" while Redis is down", rowJS(lost), "delayed=3 retry=0 ready=2 inflight=0 dead=2 paused=false")

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 10*time.Second, "the test's client back", func() bool {
		return rdb.Ping(context.Background()).Err() == nil
	})
	browserQueue{
		ready: []browserItem{{id: "ready-9", value: "after the restart"}},
		dead:  []browserItem{{id: "dead-9", value: "after the restart", reason: "failed again"}},
	}.fill(t, rdb, kept)
	for _, v := range views[:2] {
		waitEqual(t, v.ctx, v.what+": the row of the queue filled again", rowJS(kept), "delayed=0 retry=0 ready=1 inflight=0 dead=1 paused=false")
		waitEqual(t, v.ctx, v.what+": the row of the queue gone", goneRowJS(lost), "delayed=— retry=— ready=— inflight=— dead=— status=gone from Redis enabled=0")
		// The kept queue's pause button is back; the lost one's is not.
		waitEqual(t, v.ctx, v.what+" after the restart", staleJS, "banner=(none) greyed=false enabled=1")
	}
	waitEqual(t, qctx, "the page of the queue gone", textJS(`[data-testid="gone"]`)+`.replace(/\(since \d\d:\d\d:\d\d\)/, "(since T)")`,
		"Queue \u201c"+lost+"\u201d is not in Redis any more (since T): what this page shows is gone, and its actions are disabled.")
	waitEqual(t, qctx, "the tabs of the queue gone", tabsJS, "delayed=— retry=— ready=— inflight=— dead=— active=dead")
	// No banner: Redis answers. The dashes stay greyed: the queue is gone.
	waitEqual(t, qctx, "the page of the queue gone, Redis back", staleJS, "banner=(none) greyed=true enabled=0")
}

// goneRowJS returns a script giving what the overview shows of the queue
// name, gone from Redis: its counts, its status and how many of its
// actions are enabled.
func goneRowJS(name string) string {
	return `(() => {
		const row = [...document.querySelectorAll('[data-testid="queue-row"]')].find(r => r.dataset.queue === ` + jsString(name) + `);
		if (!row) return "(no row)";
		const n = s => { const c = row.querySelector('[data-testid="count-' + s + '"]'); return c ? c.textContent.trim() : "?"; };
		const enabled = [...row.querySelectorAll("button, a[data-action]")].filter(c => !c.disabled && c.getAttribute("aria-disabled") !== "true").length;
		return ["delayed", "retry", "ready", "inflight", "dead"].map(s => s + "=" + n(s)).join(" ") +
			" status=" + row.querySelector(".status").textContent.trim() + " enabled=" + enabled;
	})()`
}

// waitMatch evaluates the JavaScript expr, which gives a string, in the
// page of ctx every 50 ms until it matches re, and returns the match;
// it fails the test, with the last value, when pageWait passes first.
func waitMatch(t *testing.T, ctx context.Context, what, expr string, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(pageWait)
	for {
		got, err := evalString(ctx, expr)
		if m := re.FindStringSubmatch(got); err == nil && m != nil {
			return m
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: %q (%v), want a match of %s", what, got, err, re)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
