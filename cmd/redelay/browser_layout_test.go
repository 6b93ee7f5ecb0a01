package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// overflowJS is a script giving how far the page is wider than the
// window, in CSS pixels ("0" when it fits), and the widest element that
// sticks out, to say what to fix.
const overflowJS = `(() => {
	const over = document.documentElement.scrollWidth - innerWidth;
	if (over <= 0) return "0";
	let worst = null, right = 0;
	for (const e of document.querySelectorAll("body *")) {
		const r = e.getBoundingClientRect();
		if (r.right > right) { right = r.right; worst = e; }
	}
	const name = worst ? worst.tagName.toLowerCase() + (worst.className ? "." + String(worst.className).replace(/ /g, ".") : "") +
		(worst.dataset && worst.dataset.testid ? "[" + worst.dataset.testid + "]" : "") : "?";
	return over + "px too wide: " + name + " ends at " + Math.round(right);
})()`

// layoutQueue fills the queue of the layout test whose content stresses
// a narrow screen: an ID, a value, a header and errors of long
// unbreakable words, and a schedule. It returns its name.
func layoutQueue(t *testing.T, rdb redis.UniversalClient) string {
	t.Helper()
	name := "long-" + strings.Repeat("x", 60)
	long := strings.Repeat("unbreakable", 20)
	browserQueue{
		delayed: []browserItem{{id: "d-" + long, value: map[string]any{"key_" + long: long}}},
		ready:   []browserItem{{id: "r-1", value: long, headers: map[string]string{"h-" + long: long}}},
		dead:    []browserItem{{id: "x-" + long, value: long, reason: "failed: " + long}},
	}.fill(t, rdb, name)
	dq := delayed.New(blocking.New[string](rdb, name), delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close() })
	if err := dq.Schedule(context.Background(), "nightly-"+long[:150], "0 3 * * *", "report"); err != nil {
		t.Fatal(err)
	}
	seedtest.OverdueSchedule(t, rdb, name, "nightly-"+long[:150])
	return name
}

// layoutPages returns the pages the layout test visits: every kind the
// dashboard serves, filled with the showcase's queues and layoutQueue's,
// and the confirm pages, which open from a button.
func layoutPages(base, long string) map[string]string {
	lid := "x-" + strings.Repeat("unbreakable", 20)
	pages := map[string]string{
		"overview":       base,
		"item, dead":     pageURL(base, "item", "q", "emails", "id", "msg_01J9ZK4T7Q"),
		"item, delayed":  pageURL(base, "item", "q", "orders", "id", "ord_10406"),
		"item, long":     pageURL(base, "item", "q", long, "id", lid),
		"schedules":      pageURL(base, "schedules", "q", long),
		"purge":          pageURL(base, "purge", "q", "emails", "state", "ready"),
		"find":           pageURL(base, "queue", "q", "orders", "state", "delayed", "find", "ord_104"),
		"missing queue":  pageURL(base, "queue", "q", "nothing-here"),
		"orders, paged":  pageURL(base, "queue", "q", "orders", "state", "delayed", "limit", "5", "page", "2"),
		"long, ready":    pageURL(base, "queue", "q", long, "state", "ready"),
		"long, dead":     pageURL(base, "queue", "q", long, "state", "dead"),
		"long, delayed":  pageURL(base, "queue", "q", long, "state", "delayed"),
		"emails, retry":  pageURL(base, "queue", "q", "emails", "state", "retry"),
		"orders, flight": pageURL(base, "queue", "q", "orders", "state", "inflight"),
		"consumers":      base + "consumers",
		"redis":          base + "redis",
	}
	for _, st := range []string{"delayed", "ready", "dead"} {
		pages["emails, "+st] = pageURL(base, "queue", "q", "emails", "state", st)
	}
	return pages
}

// Every page fits a phone's screen, 390 px wide, without scrolling
// sideways, and a desktop's; the confirm pages too. The pages follow the
// system's dark mode.
func TestBrowserLayout(t *testing.T) {
	rdb := redistest.StartServer(t).Client(t)
	fillShowcase(t, rdb)
	long := layoutQueue(t, rdb)
	consumeIdle(t, rdb, "invoices")
	base := startDashboard(t, rdb)
	browser := newBrowser(t)
	pages := layoutPages(base, long)

	for _, width := range []int64{narrowWidth, wideWidth} {
		ctx := newTabAt(t, browser, width)
		for what, u := range pages {
			openAny(t, ctx, u)
			waitVisible(t, ctx, "main")
			// The stale banner must not be what widens the page: wait for
			// the first refresh.
			waitEqual(t, ctx, what+" at "+fmt.Sprint(width)+" px", overflowJS, "0")
		}
		// With every value opened, and a row's reschedule form.
		open(t, ctx, pages["long, delayed"])
		evalJS[bool](t, ctx, `(() => { document.querySelectorAll("details").forEach(d => d.open = true); return true; })()`)
		waitEqual(t, ctx, fmt.Sprintf("the delayed items opened at %d px", width), overflowJS, "0")
		// The confirm pages, reached by their buttons.
		for what, click := range map[string][2]string{
			"pause":       {pageURL(base, "queue", "q", long), `[data-testid="action-pause"]`},
			"cancel":      {pages["long, dead"], `[data-testid="item-row"] [data-testid="action-cancel"]`},
			"requeue all": {pages["long, dead"], `[data-testid="action-requeue-all"]`},
			"unschedule":  {pages["schedules"], `[data-testid="action-unschedule"]`},
		} {
			open(t, ctx, click[0])
			clickAndLoad(t, ctx, click[1])
			waitVisible(t, ctx, `[data-testid="confirm"]`)
			waitEqual(t, ctx, fmt.Sprintf("the confirm page of %s at %d px", what, width), overflowJS, "0")
		}
	}

	// Dark mode follows the system's preference.
	ctx := newTabAt(t, browser, narrowWidth)
	bg := `getComputedStyle(document.body).backgroundColor + " " + getComputedStyle(document.body).color`
	open(t, ctx, base)
	waitEqual(t, ctx, "the colours in light mode", bg, "rgb(255, 255, 255) rgb(29, 35, 41)")
	prefer(t, ctx, "dark")
	waitEqual(t, ctx, "the colours in dark mode", bg, "rgb(20, 24, 29) rgb(227, 231, 236)")
	for _, what := range []string{"emails, dead", "item, dead"} {
		open(t, ctx, pages[what])
		waitEqual(t, ctx, what+" in dark mode", bg, "rgb(20, 24, 29) rgb(227, 231, 236)")
	}
}

// consumeIdle runs a Consume of the queue name, which is paused (so that
// it takes nothing), until the test ends, and returns once the consumer
// has recorded itself.
func consumeIdle(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	q := blocking.New[map[string]any](rdb, name)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(context.Context, *blocking.Delivery[map[string]any]) error { return nil }, blocking.WithConcurrency(4))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		_ = q.Close()
	})
	in := inspect.New(rdb)
	redistest.WaitFor(t, 15*time.Second, "the consumer of "+name+" recorded", func() bool {
		all, err := in.Consumers(context.Background())
		return err == nil && len(all) > 0
	})
}

// prefer makes the tab of ctx report the colour scheme the system
// prefers: "dark", "light", or "" for the browser's own.
func prefer(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	media := emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}
	if _, err := chromedp.Call(sctx, emulation.SetEmulatedMedia, media); err != nil {
		t.Fatalf("preferring %q: %v", scheme, err)
	}
}

// openAny loads u in the tab of ctx, whatever its status: an error page
// has a layout too.
func openAny(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	if _, err := chromedp.Run(sctx, chromedp.NavigateResponse(u)); err != nil {
		t.Fatalf("opening %s: %v", u, err)
	}
}
