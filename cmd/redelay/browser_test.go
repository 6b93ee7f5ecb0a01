package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// chromiumPath is where Debian's chromium package installs the browser
// that the browser tests drive.
const chromiumPath = "/usr/bin/chromium"

// browserTestTimeout bounds each browser test, from starting the browser
// to its last check.
const browserTestTimeout = 60 * time.Second

// pageWait bounds how long a browser test waits for one step: a page to
// load, an element to show, a condition on the page to hold.
const pageWait = 15 * time.Second

// The widths the layout is checked at, in CSS pixels: a desktop's window
// and a phone's screen.
const (
	wideWidth   = 1440
	narrowWidth = 390
)

// windowHeight is the height of the browser's window at either width.
const windowHeight = 900

// Browser tests: the dashboard, served by the command as a user runs it,
// driven by headless Chromium. Each scenario has a queue of its own on the
// shared Redis server and a tab of its own.
func TestBrowser(t *testing.T) {
	rdb := redistest.Standalone(t)
	full := startDashboard(t, rdb)
	readOnly := startDashboard(t, rdb, "--read-only")
	browser := newBrowser(t)

	t.Run("overview", func(t *testing.T) {
		name := countsQueue(t, rdb)
		ctx := newTab(t, browser)
		open(t, ctx, full)
		waitVisible(t, ctx, rowSelector(name))
		waitEqual(t, ctx, "the overview's row of the queue", rowJS(name), "delayed=3 retry=0 ready=2 inflight=0 dead=2 paused=false")
		waitEqual(t, ctx, "the eviction banner under noeviction", textJS(`[data-testid="eviction"]`), "(none)")
	})

	t.Run("requeue", func(t *testing.T) {
		name := countsQueue(t, rdb)
		ctx := newTab(t, browser)
		open(t, ctx, full)
		clickAndLoad(t, ctx, rowSelector(name)+` [data-testid="queue-link"]`)
		waitEqual(t, ctx, "the queue page's heading", textJS(`[data-testid="queue-name"]`), name)
		clickAndLoad(t, ctx, `[data-testid="tab-dead"]`)
		waitEqual(t, ctx, "the tabs", tabsJS, "delayed=3 retry=0 ready=2 inflight=0 dead=2 active=dead")
		waitEqual(t, ctx, "the dead letters listed", itemIDsJS, `["dead-1","dead-2"]`)
		requeue := `[data-testid="item-row"][data-id="dead-1"] [data-testid="action-requeue"]`
		waitEqual(t, ctx, "the requeue form", `(() => {
			const f = document.querySelector(`+jsString(requeue)+`).form;
			const tok = f.querySelector('input[type="hidden"][name="csrf"]');
			return f.method + " " + (tok && tok.value !== "");
		})()`, "post true")
		clickAndLoad(t, ctx, requeue)
		waitVisible(t, ctx, `[data-testid="flash"]`)
		waitEqual(t, ctx, "the flash", textJS(`[data-testid="flash"]`), `Requeued dead letter "dead-1": it is ready now.`)
		waitEqual(t, ctx, "the tabs after the requeue", tabsJS, "delayed=3 retry=0 ready=3 inflight=0 dead=1 active=dead")
		waitEqual(t, ctx, "the dead letters listed after the requeue", itemIDsJS, `["dead-2"]`)
		open(t, ctx, full)
		waitEqual(t, ctx, "the overview's row after the requeue", rowJS(name), "delayed=3 retry=0 ready=3 inflight=0 dead=1 paused=false")
		if st := queueStats(t, rdb, name); st.Dead != 1 || st.Ready != 3 {
			t.Errorf("stats after the requeue: %+v", st)
		}
	})

	t.Run("pause", func(t *testing.T) {
		name := countsQueue(t, rdb)
		ctx := newTab(t, browser)
		open(t, ctx, full)
		waitVisible(t, ctx, rowSelector(name))
		clickAndLoad(t, ctx, rowSelector(name)+` [data-testid="action-pause"]`)
		// It asks first; going back changes nothing.
		waitEqual(t, ctx, "the question", textJS(`[data-testid="confirm-question"]`), fmt.Sprintf("Pause queue %q?", name))
		clickAndLoad(t, ctx, `[data-testid="confirm-keep"]`)
		waitEqual(t, ctx, "the overview's row after keeping it running", rowJS(name), "delayed=3 retry=0 ready=2 inflight=0 dead=2 paused=false")
		if queueStats(t, rdb, name).Paused {
			t.Fatal("paused without confirming")
		}
		clickAndLoad(t, ctx, rowSelector(name)+` [data-testid="action-pause"]`)
		clickAndLoad(t, ctx, `[data-testid="confirm"]`)
		waitVisible(t, ctx, rowSelector(name)+` [data-testid="paused"]`)
		waitEqual(t, ctx, "the flash", textJS(`[data-testid="flash"]`), fmt.Sprintf("Paused queue %q: no process hands out its items until it is resumed.", name))
		if !queueStats(t, rdb, name).Paused {
			t.Fatal("the queue is not paused after Pause")
		}
		clickAndLoad(t, ctx, rowSelector(name)+` [data-testid="action-resume"]`)
		waitEqual(t, ctx, "the flash", textJS(`[data-testid="flash"]`), fmt.Sprintf("Resumed queue %q.", name))
		waitEqual(t, ctx, "the overview's row after Resume", rowJS(name), "delayed=3 retry=0 ready=2 inflight=0 dead=2 paused=false")
		if queueStats(t, rdb, name).Paused {
			t.Fatal("the queue is paused after Resume")
		}
	})

	t.Run("bulk", func(t *testing.T) {
		testBulk(t, rdb, browser, full)
	})

	t.Run("inline-error", func(t *testing.T) {
		testInlineError(t, rdb, browser, full)
	})

	t.Run("history", func(t *testing.T) {
		testHistory(t, rdb, browser, full)
	})

	t.Run("xss", func(t *testing.T) {
		testXSS(t, rdb, browser, full)
	})

	t.Run("read-only", func(t *testing.T) {
		testReadOnly(t, rdb, browser, full, readOnly)
	})

	t.Run("property-names", func(t *testing.T) {
		testPropertyNames(t, browser)
	})

	t.Run("eviction", func(t *testing.T) {
		testEvictionBanner(t, browser)
	})
}

// testEvictionBanner checks that every page of a dashboard whose Redis
// server may evict keys says so at the top, above the page's own content.
func testEvictionBanner(t *testing.T, browser context.Context) {
	rdb := redistest.StartServer(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru")).Client(t)
	name := countsQueue(t, rdb)
	base := startDashboard(t, rdb)
	want := "Redis may evict keys when it is full (maxmemory-policy allkeys-lru): queued items can vanish without an error. Set maxmemory-policy noeviction on every Redis server of these queues."
	banner := `[data-testid="eviction"]`
	// The banner comes before the page's content, in view without scrolling.
	placed := `(() => {
		const b = document.querySelector('[data-testid="eviction"]'), m = document.querySelector("main");
		if (!b) return "(none)";
		const r = b.getBoundingClientRect();
		return (b.compareDocumentPosition(m) & Node.DOCUMENT_POSITION_FOLLOWING ? "before main" : "after main") +
			(r.top >= 0 && r.bottom <= innerHeight && r.height > 0 ? ", in view" : ", out of view");
	})()`
	ctx := newTab(t, browser)
	open(t, ctx, base)
	waitVisible(t, ctx, banner)
	waitEqual(t, ctx, "the overview's banner", textJS(banner), want)
	waitEqual(t, ctx, "where the banner is", placed, "before main, in view")
	clickAndLoad(t, ctx, rowSelector(name)+` [data-testid="queue-link"]`)
	waitEqual(t, ctx, "the queue page's heading", textJS(`[data-testid="queue-name"]`), name)
	waitEqual(t, ctx, "the queue page's banner", textJS(banner), want)
	clickAndLoad(t, ctx, `[data-testid="tab-dead"]`)
	waitEqual(t, ctx, "the dead tab's banner", textJS(banner), want)
	open(t, ctx, pageURL(base, "item", "q", name, "id", "dead-1"))
	waitEqual(t, ctx, "the item page's banner", textJS(banner), want)
	open(t, ctx, pageURL(base, "schedules", "q", name))
	waitEqual(t, ctx, "the schedules page's banner", textJS(banner), want)
}

// testPropertyNames checks that queues named like the properties every
// JavaScript object has (__proto__, constructor) are updated live like
// any other: the page's script indexes the sampled queues by name.
func testPropertyNames(t *testing.T, browser context.Context) {
	rdb := redistest.StartServer(t).Client(t) // fixed names: a server of their own
	base := startDashboard(t, rdb)
	names := []string{"__proto__", "constructor"}
	for _, name := range names {
		browserQueue{
			ready: []browserItem{{id: "ready-1", value: "a"}},
			dead:  []browserItem{{id: "dead-1", value: "b", reason: "failed"}},
		}.fill(t, rdb, name)
	}
	offer := func(name, id string) {
		t.Helper()
		q := blocking.New[string](rdb, name)
		defer q.Close()
		if _, err := q.Offer(context.Background(), "c", blocking.WithID(id)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := newTab(t, browser)
	for _, name := range names {
		open(t, ctx, pageURL(base, "queue", "q", name))
		waitEqual(t, ctx, name+"'s tabs", tabsJS, "delayed=0 retry=0 ready=1 inflight=0 dead=1 active=delayed")
		offer(name, "ready-2")
		waitEqual(t, ctx, name+"'s tabs, updated live", tabsJS, "delayed=0 retry=0 ready=2 inflight=0 dead=1 active=delayed")
	}
	open(t, ctx, base)
	for _, name := range names {
		waitEqual(t, ctx, name+"'s row", rowJS(name), "delayed=0 retry=0 ready=2 inflight=0 dead=1 paused=false")
		offer(name, "ready-3")
		waitEqual(t, ctx, name+"'s row, updated live", rowJS(name), "delayed=0 retry=0 ready=3 inflight=0 dead=1 paused=false")
	}
}

// The payloads of the XSS scenario: each sets window.__xss if the page
// runs it.
const (
	xssScript = `<script>window.__xss=1</script>`
	xssAttr   = `"><img src=x onerror="window.__xss=1">`
	xssSVG    = `'"><svg onload=window.__xss=1>`
)

// testXSS fills a queue whose name, IDs, values, headers and last error
// hold markup, visits every page that shows them, and checks that none
// runs and that the markup shows as text.
func testXSS(t *testing.T, rdb redis.UniversalClient, browser context.Context, full string) {
	name := redistest.QueueName(t) + `-"'><img/src=x/onerror=window.__xss=1>`
	q := browserQueue{
		delayed: []browserItem{{id: `delayed"><script>window.__xss=1</script>`, value: "</pre>" + xssScript}},
		ready: []browserItem{
			{id: "script-value", value: xssScript},
			{id: "attr-value", value: xssAttr, headers: map[string]string{xssAttr: xssAttr}},
		},
		dead: []browserItem{{id: xssSVG, value: map[string]any{"note": xssScript}, reason: xssAttr}},
	}
	q.fill(t, rdb, name)
	ctx := newTab(t, browser)

	// safeJS says why the page ran or injected markup, or "" when it did
	// neither. The dashboard's own pages have no img, no inline script
	// and no event handler attribute.
	const safeJS = `(() => {
		if (typeof window.__xss !== "undefined") return "window.__xss is " + window.__xss;
		const n = document.querySelectorAll('img, script:not([src]), [onerror], [onload]').length;
		return n ? n + " injected elements" : "";
	})()`
	check := func(what string) {
		t.Helper()
		if got := evalJS[string](t, ctx, safeJS); got != "" {
			t.Errorf("%s: %s", what, got)
		}
	}

	open(t, ctx, full)
	waitEqual(t, ctx, "the queue's link on the overview", `(() => {
		const row = [...document.querySelectorAll('[data-testid="queue-row"]')].find(r => r.dataset.queue === `+jsString(name)+`);
		return row ? row.querySelector('[data-testid="queue-link"]').textContent : "no row";
	})()`, name)
	check("overview")

	links := map[string]string{} // the item pages, by ID
	for _, st := range []string{"delayed", "ready", "dead"} {
		open(t, ctx, pageURL(full, "queue", "q", name, "state", st))
		waitEqual(t, ctx, "the queue page's heading", textJS(`[data-testid="queue-name"]`), name)
		check(st + " tab")
		// Every ID is an attribute and a link's text; every payload and
		// error is text.
		var ids []string
		for _, it := range q.items(st) {
			ids = append(ids, it.id)
		}
		slices.Sort(ids)
		waitEqual(t, ctx, st+" items", itemIDsJS, jsonText(ids))
		for _, it := range q.items(st) {
			row := `[...document.querySelectorAll('[data-testid="item-row"]')].find(r => r.dataset.id === ` + jsString(it.id) + `)`
			got := evalJS[[]string](t, ctx, `(() => { const r = `+row+`; return [
				r.querySelector('[data-testid="item-link"]').textContent,
				r.querySelector('[data-testid="payload"]').textContent,
				r.querySelector('td.error').textContent,
			]; })()`)
			if got[0] != it.id || !strings.Contains(got[1], payloadShown(it.value)) || !shownError(got[2], it.reason) {
				t.Errorf("%s row of %q shows link %q, payload %q, error %q", st, it.id, got[0], got[1], got[2])
			}
			links[it.id] = evalJS[string](t, ctx, row+`.querySelector('[data-testid="item-link"]').href`)
		}
	}

	for _, it := range q.all() {
		open(t, ctx, links[it.id])
		waitEqual(t, ctx, "the item's ID", textJS(`[data-testid="item-id"]`), it.id)
		check("item " + it.id)
		if got := evalJS[string](t, ctx, textJS(`[data-testid="payload"]`)); !strings.Contains(got, payloadShown(it.value)) {
			t.Errorf("item %q: payload %q, without %q", it.id, got, payloadShown(it.value))
		}
		// The errors, newest last: the reasons as given.
		if got := evalJS[string](t, ctx, textJS(`[data-testid="error-entry"]:last-child`)); it.reason == "" && got != "(none)" || it.reason != "" && got != it.reason {
			t.Errorf("item %q: last error %q, want %q", it.id, got, it.reason)
		}
		for k, v := range it.headers {
			got := evalJS[[]string](t, ctx, `(() => {
				const r = [...document.querySelectorAll('[data-testid="header-row"]')].find(r => r.dataset.name === `+jsString(k)+`);
				return r ? [...r.cells].map(c => c.textContent) : [];
			})()`)
			if !slices.Equal(got, []string{k, v}) {
				t.Errorf("item %q: header row %q, want %q", it.id, got, []string{k, v})
			}
		}
	}
}

// testReadOnly checks that a read-only dashboard shows no action and
// refuses a forged POST that carries the browser's cookies and a valid
// token of the full dashboard, which accepts the same request.
func testReadOnly(t *testing.T, rdb redis.UniversalClient, browser context.Context, full, readOnly string) {
	name := countsQueue(t, rdb)
	ctx := newTab(t, browser)

	// The full dashboard sets its cookie and puts the same token in its
	// forms.
	open(t, ctx, full)
	token := evalJS[string](t, ctx, `document.querySelector('input[type="hidden"][name="csrf"]').value`)
	if token == "" {
		t.Fatal("no anti-forgery token in the full dashboard's forms")
	}

	// actionsJS counts what could change anything: action buttons and
	// links, and forms that POST.
	const actionsJS = `document.querySelectorAll('[data-testid^="action-"], form[method="post" i]').length`
	pages := []string{
		readOnly,
		pageURL(readOnly, "queue", "q", name, "state", "dead"),
		pageURL(readOnly, "queue", "q", name, "state", "ready"),
		pageURL(readOnly, "item", "q", name, "id", "dead-1"),
	}
	for _, p := range pages {
		open(t, ctx, p)
		waitVisible(t, ctx, `[data-testid="read-only"]`)
		if n := evalJS[int](t, ctx, actionsJS); n != 0 {
			t.Errorf("%s: %d actions on a read-only page", p, n)
		}
	}
	if n := evalJS[int](t, ctx, `document.querySelectorAll('[data-testid="header-row"], [data-testid="item-fields"]').length`); n == 0 {
		t.Error("the read-only item page shows no field")
	}

	// forge posts from the current page to an action, confirmed, with the page's
	// cookies and the full dashboard's token, and returns the status: 303
	// for the redirect of an action that was done.
	forge := func(action string, query url.Values) int {
		t.Helper()
		return evalJS[int](t, ctx, `fetch(`+jsString("actions/"+action+"?"+query.Encode())+`, {
			method: "POST",
			credentials: "same-origin",
			redirect: "manual",
			headers: {"Content-Type": "application/x-www-form-urlencoded"},
			body: new URLSearchParams({csrf: `+jsString(token)+`, confirm: "yes"}).toString(),
		}).then(r => r.type === "opaqueredirect" ? 303 : r.status)`, chromedp.EvalAwaitPromise)
	}
	forged := []struct {
		action string
		query  url.Values
	}{
		{"pause", url.Values{"q": {name}}},
		{"requeue", url.Values{"q": {name}, "id": {"dead-1"}, "state": {"dead"}}},
		{"requeue-all", url.Values{"q": {name}, "state": {"dead"}}},
		{"purge", url.Values{"q": {name}, "state": {"ready"}}},
	}
	for _, f := range forged {
		if code := forge(f.action, f.query); code != 403 {
			t.Errorf("forged POST to the read-only dashboard's %s: %d, want 403", f.action, code)
		}
	}
	if st := queueStats(t, rdb, name); st != (inspect.Stats{Delayed: 3, Ready: 2, Dead: 2, Latency: st.Latency, NextDue: st.NextDue, Eviction: st.Eviction, Failed: 2}) {
		t.Errorf("stats after forged POSTs to a read-only dashboard: %+v", st)
	}

	// The same request to the full dashboard is done: the read-only one
	// refused it for being read-only.
	open(t, ctx, full)
	if code := forge("pause", url.Values{"q": {name}}); code != 303 {
		t.Fatalf("the same POST to the full dashboard: %d, want 303", code)
	}
	if !queueStats(t, rdb, name).Paused {
		t.Error("the queue is not paused by the full dashboard")
	}
}

// browserItem is an item that browserQueue.fill puts in a queue.
type browserItem struct {
	id      string
	value   any
	headers map[string]string
	reason  string // for a dead letter: the error that killed it
}

// browserQueue is what browserQueue.fill puts in a queue, by state.
type browserQueue struct {
	delayed, ready, dead []browserItem
}

// items returns q's items in the state st.
func (q browserQueue) items(st string) []browserItem {
	switch st {
	case "delayed":
		return q.delayed
	case "ready":
		return q.ready
	case "dead":
		return q.dead
	}
	return nil
}

// all returns q's items, delayed, ready then dead.
func (q browserQueue) all() []browserItem {
	return slices.Concat(q.delayed, q.ready, q.dead)
}

// fill makes the queue name hold q's items: the dead letters (each
// received once and nacked with its reason, one attempt being allowed),
// the ready items, and the delayed ones, due in an hour. q must hold a
// dead letter: receiving it is what announces the queue. It returns once
// the queue is in the registry of queues with its codec (so that the
// dashboard lists it and decodes its values) and its stats show the
// items. The queue's handles are closed in t.Cleanup.
func (q browserQueue) fill(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	bq := blocking.New[any](rdb, name, blocking.WithMaxAttempts(1))
	t.Cleanup(func() { _ = bq.Close() })
	dq := delayed.New(bq, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close() })
	for _, it := range q.dead {
		seedtest.DeadLetter(ctx, t, bq, it.id, it.value, it.headers, it.reason)
	}
	for _, it := range q.ready {
		if _, err := bq.Offer(ctx, it.value, blocking.WithID(it.id), blocking.WithHeaders(it.headers)); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range q.delayed {
		if _, err := dq.Offer(ctx, it.value, time.Hour, delayed.WithID(it.id), delayed.WithHeaders(it.headers)); err != nil {
			t.Fatal(err)
		}
	}
	waitListed(t, rdb, name, func(st inspect.Stats) bool {
		return st.Delayed == int64(len(q.delayed)) && st.Ready == int64(len(q.ready)) && st.Dead == int64(len(q.dead)) &&
			st.Retry == 0 && st.Inflight == 0
	})
}

// waitListed waits until the queue name is in the registry of queues with
// its codec recorded, and its stats satisfy ok.
func waitListed(t *testing.T, rdb redis.UniversalClient, name string, ok func(inspect.Stats) bool) {
	t.Helper()
	ctx := context.Background()
	in := inspect.New(rdb)
	redistest.WaitFor(t, 10*time.Second, "queue "+name+" listed, with its codec and its items", func() bool {
		names, err := in.Queues(ctx)
		if err != nil || !slices.Contains(names, name) {
			return false
		}
		if rdb.HGet(ctx, redistest.KeysOf(name).Meta, "codec").Val() == "" {
			return false
		}
		st, err := in.Stats(ctx, name)
		return err == nil && ok(st)
	})
}

// countsQueue fills a new queue with 3 delayed items, 2 ready ones
// (ready-1, ready-2) and 2 dead letters (dead-1, dead-2), and returns its
// name.
func countsQueue(t *testing.T, rdb redis.UniversalClient) string {
	t.Helper()
	item := func(id string, qty int) browserItem {
		return browserItem{id: id, value: map[string]any{"sku": "sku-" + id, "qty": qty}}
	}
	dead := func(id, reason string) browserItem {
		it := item(id, 1)
		it.reason = reason
		return it
	}
	name := redistest.QueueName(t)
	browserQueue{
		delayed: []browserItem{item("delayed-1", 1), item("delayed-2", 2), item("delayed-3", 3)},
		ready:   []browserItem{item("ready-1", 4), item("ready-2", 5)},
		dead:    []browserItem{dead("dead-1", "out of stock"), dead("dead-2", "address not found")},
	}.fill(t, rdb, name)
	return name
}

// queueStats returns the stats of the queue name, read with the library.
func queueStats(t *testing.T, rdb redis.UniversalClient, name string) inspect.Stats {
	t.Helper()
	st, err := inspect.New(rdb).Stats(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// startDashboard runs `redelay dashboard --listen 127.0.0.1:0` with the
// connection flags of rdb and extra, waits for the address it prints, and
// returns its URL ("http://127.0.0.1:PORT/"). In t.Cleanup it interrupts
// the command and fails the test unless it exits 0; its stderr is logged
// when the test failed.
func startDashboard(t *testing.T, rdb redis.UniversalClient, extra ...string) string {
	t.Helper()
	args := with(connFlags(t, rdb), append([]string{"dashboard", "--listen", "127.0.0.1:0"}, extra...)...)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := command(ctx, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		output []string
	)
	logged := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(output, "\n")
	}
	listening := regexp.MustCompile(`^dashboard: (http://[^ ]+/)$`)
	urls := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			mu.Lock()
			output = append(output, s.Text())
			mu.Unlock()
			if m := listening.FindStringSubmatch(s.Text()); m != nil {
				select {
				case urls <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		defer cancel()
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Errorf("interrupting redelay %q: %v", args, err)
		}
		kill := time.AfterFunc(10*time.Second, cancel)
		defer kill.Stop()
		<-done
		if err := cmd.Wait(); err != nil {
			t.Errorf("redelay %q interrupted: %v", args, err)
		}
		if t.Failed() {
			t.Logf("redelay %q stderr:\n%s", args, logged())
		}
	})
	select {
	case u := <-urls:
		return u
	case <-done:
		t.Fatalf("redelay %q exited before listening:\n%s", args, logged())
	case <-time.After(20 * time.Second):
		t.Fatalf("redelay %q printed no address:\n%s", args, logged())
	}
	return ""
}

// findChromium returns the path of the browser to drive: Debian's
// chromium, or a Chromium or Chrome on the PATH. It fails the test when
// there is none: the browser tests do not skip.
func findChromium(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium: neither %s nor chromium, chromium-browser, google-chrome or headless-shell on the PATH; the browser tests need one (on Debian: apt-get install chromium)", chromiumPath)
	return ""
}

// newBrowser starts headless Chromium, wideWidth×windowHeight, and returns its context,
// which ends within browserTestTimeout. In t.Cleanup the browser is
// stopped and waited for, with every goroutine that drove it.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(findChromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.WindowSize(wideWidth, windowHeight),
	)
	ctx, cancelTimeout := context.WithTimeout(context.Background(), browserTestTimeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelTimeout()
	})
	if err := chromedp.Do(bctx); err != nil {
		t.Fatalf("starting Chromium: %v", err)
	}
	return bctx
}

// newTab opens a tab in browser and returns its context; the tab is
// closed in t.Cleanup.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("opening a tab: %v", err)
	}
	return ctx
}

// newTabAt opens a tab in browser whose viewport is width CSS pixels wide
// (and windowHeight high), and returns its context.
func newTabAt(t *testing.T, browser context.Context, width int64) context.Context {
	t.Helper()
	ctx := newTab(t, browser)
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	if _, err := chromedp.Run(sctx, chromedp.EmulateViewport(width, windowHeight)); err != nil {
		t.Fatalf("setting the viewport to %d px: %v", width, err)
	}
	return ctx
}

// open loads u in the tab of ctx and fails the test unless it answers
// 200 OK.
func open(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	resp, err := chromedp.Run(sctx, chromedp.NavigateResponse(u))
	switch {
	case err != nil:
		t.Fatalf("opening %s: %v", u, err)
	case resp == nil:
		t.Fatalf("opening %s: no response", u)
	case resp.Status != 200:
		t.Fatalf("opening %s: %d %s", u, resp.Status, resp.StatusText)
	}
}

// clickAndLoad clicks the element sel selects in the tab of ctx, waits for
// the page that loads, and fails the test unless it answers 200 OK (after
// the redirect of an action).
func clickAndLoad(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	resp, err := chromedp.RunResponse(sctx, chromedp.Click(chromedp.CSS(sel)))
	switch {
	case err != nil:
		t.Fatalf("clicking %s: %v", sel, err)
	case resp == nil:
		t.Fatalf("clicking %s: no response", sel)
	case resp.Status != 200:
		t.Fatalf("clicking %s: %d %s at %s", sel, resp.Status, resp.StatusText, resp.URL)
	}
}

// waitVisible waits until the element sel selects is visible in the tab
// of ctx.
func waitVisible(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	if err := chromedp.Do(sctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("waiting for %s: %v", sel, err)
	}
}

// evalJS evaluates the JavaScript expr in the page of ctx and returns its
// value; opts are chromedp.EvalAwaitPromise and the like.
func evalJS[T any](t *testing.T, ctx context.Context, expr string, opts ...chromedp.EvaluateOption) T {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	v, err := chromedp.Run(sctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitEqual evaluates the JavaScript expr, which gives a string, in the
// page of ctx every 50 ms until it is want, and fails the test, naming
// what it waited for and with the last value, when pageWait passes first.
func waitEqual(t *testing.T, ctx context.Context, what, expr, want string) {
	t.Helper()
	deadline := time.Now().Add(pageWait)
	for {
		got, err := evalString(ctx, expr)
		if err == nil && got == want {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: %q (%v), want %q", what, got, err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// evalString evaluates the JavaScript expr, which gives a string, in the
// page of ctx, within pageWait.
func evalString(ctx context.Context, expr string) (string, error) {
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	return chromedp.Run(sctx, chromedp.Evaluate[string](expr))
}

// waitAtLeast evaluates the JavaScript expr, which gives a number, in the
// page of ctx every 100 ms until it is at least n, and fails the test when
// within passes first.
func waitAtLeast(t *testing.T, ctx context.Context, within time.Duration, what, expr string, n int) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		sctx, cancel := context.WithTimeout(ctx, pageWait)
		got, err := chromedp.Run(sctx, chromedp.Evaluate[int](expr))
		cancel()
		if err == nil && got >= n {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: %d (%v), want at least %d", what, got, err, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// jsString returns s as a JavaScript string literal.
func jsString(s string) string { return jsonText(s) }

// jsonText returns v encoded as JSON, without the escapes of HTML's
// special characters that encoding/json adds by default (as the
// dashboard shows values).
func jsonText(v any) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// payloadShown returns what the dashboard's payload cell must contain of
// the value v: a string as a JSON string without its quotes (which escapes
// the quotes inside), a map as the indented JSON of one of its entries.
func payloadShown(v any) string {
	switch x := v.(type) {
	case string:
		s := jsString(x)
		return s[1 : len(s)-1]
	case map[string]any:
		for k, e := range x {
			return jsString(k) + ": " + jsString(fmt.Sprint(e))
		}
	}
	return fmt.Sprint(v)
}

// shownError reports whether shown is how the dashboard shows the last
// error of an item that failed with reason ("" when it did not fail): the
// reason, then the attempt the library adds, as in "boom (attempt 1 of
// 1)".
func shownError(shown, reason string) bool {
	if reason == "" {
		return shown == ""
	}
	return strings.HasPrefix(shown, reason+" (attempt ")
}

// pageURL returns the URL of the dashboard page at base with the query
// made of the key-value pairs kv.
func pageURL(base, page string, kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return base + page + "?" + v.Encode()
}

// rowSelector returns the CSS selector of the overview's row of the queue
// name, made of characters that need no escaping in a CSS string.
func rowSelector(name string) string {
	return fmt.Sprintf(`[data-testid="queue-row"][data-queue=%q]`, name)
}

// textJS returns a script giving the text of the element sel selects, or
// "(none)" when there is none.
func textJS(sel string) string {
	return `(() => { const e = document.querySelector(` + jsString(sel) + `); return e ? e.textContent.trim() : "(none)"; })()`
}

// rowJS returns a script giving what the overview shows of the queue
// name: its counts by state and whether it is paused, as in "delayed=3
// retry=0 ready=2 inflight=0 dead=2 paused=false", or "(no row)".
func rowJS(name string) string {
	return `(() => {
		const row = [...document.querySelectorAll('[data-testid="queue-row"]')].find(r => r.dataset.queue === ` + jsString(name) + `);
		if (!row) return "(no row)";
		const n = s => { const c = row.querySelector('[data-testid="count-' + s + '"]'); return c ? c.textContent.trim() : "?"; };
		return ["delayed", "retry", "ready", "inflight", "dead"].map(s => s + "=" + n(s)).join(" ") +
			" paused=" + !!row.querySelector('[data-testid="paused"]');
	})()`
}

// tabsJS is a script giving what a queue page's tabs show: the count of
// each state and the active tab, as in "delayed=3 retry=0 ready=2
// inflight=0 dead=2 active=dead".
const tabsJS = `(() => {
	const n = s => { const c = document.querySelector('[data-testid="tab-' + s + '"] [data-live-count]'); return c ? c.textContent.trim() : "?"; };
	const active = document.querySelector('[data-testid^="tab-"][aria-current="page"]');
	return ["delayed", "retry", "ready", "inflight", "dead"].map(s => s + "=" + n(s)).join(" ") +
		" active=" + (active ? active.dataset.testid.slice(4) : "none");
})()`

// itemIDsJS is a script giving the IDs of a queue page's item rows,
// sorted, as a JSON array.
const itemIDsJS = `JSON.stringify([...document.querySelectorAll('[data-testid="item-row"]')].map(r => r.dataset.id).sort())`
