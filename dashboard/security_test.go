package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// tokenOf returns the anti-forgery token in p's forms.
func tokenOf(t *testing.T, p page) string {
	t.Helper()
	m := reHidden.FindStringSubmatch(p.body)
	if m == nil || m[1] != "csrf" {
		t.Fatalf("no token on %s", p.url)
	}
	return m[2]
}

// cookieName returns the name of the cookie p sets.
func cookieName(t *testing.T, p page) string {
	t.Helper()
	c, err := http.ParseSetCookie(p.header.Get("Set-Cookie"))
	if err != nil {
		t.Fatalf("Set-Cookie %q: %v", p.header.Get("Set-Cookie"), err)
	}
	return c.Name
}

// A POST without a valid token, or from another origin, is refused with
// 403 and changes nothing; a GET on an action is 405.
func TestCSRF(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		pause := "actions/pause?q=" + url.QueryEscape(f.name)

		// No cookie, no token.
		wantStatus(t, b.post(pause, url.Values{}), http.StatusForbidden)
		// No cookie, a token.
		other := newBrowser(t, dashboard.New(rdb), "")
		foreign := tokenOf(t, other.get("./"))
		wantStatus(t, b.post(pause, url.Values{"csrf": {foreign}}), http.StatusForbidden)

		p := b.get("./")
		tok := tokenOf(t, p)
		set := p.header.Get("Set-Cookie")
		for _, attr := range []string{"HttpOnly", "SameSite=Strict", "Path=/"} {
			if !strings.Contains(set, attr) {
				t.Errorf("cookie %q without %s", set, attr)
			}
		}
		// The cookie, no token in the form.
		wantStatus(t, b.post(pause, url.Values{}), http.StatusForbidden)
		// The cookie, another token.
		wantStatus(t, b.post(pause, url.Values{"csrf": {tok + "x"}}), http.StatusForbidden)
		wantStatus(t, b.post(pause, url.Values{"csrf": {foreign}}), http.StatusForbidden)
		// Cookie and field equal, but issued by another dashboard's key.
		b.c.Jar.SetCookies(b.mount, []*http.Cookie{{Name: cookieName(t, p), Value: foreign, Path: "/"}})
		wantStatus(t, b.post(pause, url.Values{"csrf": {foreign}}), http.StatusForbidden)
		b.c.Jar.SetCookies(b.mount, []*http.Cookie{{Name: cookieName(t, p), Value: tok, Path: "/"}})
		// A valid token from a cross-site page.
		req, err := http.NewRequest(http.MethodPost, b.resolve(pause).String(), strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res, err := b.c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST: %d", res.StatusCode)
		}
		if f.stats(t).Paused {
			t.Fatal("a refused POST paused the queue")
		}
		// The same token, same origin: accepted (confirmed, or it only asks).
		wantStatus(t, b.post(pause, url.Values{"csrf": {tok}}), http.StatusOK)
		if f.stats(t).Paused {
			t.Fatal("paused without confirming")
		}
		wantStatus(t, b.post(pause, url.Values{"csrf": {tok}, "confirm": {"yes"}}), http.StatusSeeOther)
		if !f.stats(t).Paused {
			t.Fatal("not paused")
		}

		// GET (and HEAD) on every action: 405, naming POST.
		for _, a := range []string{"cancel", "promote", "reschedule", "requeue", "requeue-all", "purge", "pause", "resume"} {
			p := b.get("actions/" + a + "?q=" + url.QueryEscape(f.name) + "&id=o-ready&state=ready")
			wantStatus(t, p, http.StatusMethodNotAllowed)
			if p.header.Get("Allow") != http.MethodPost {
				t.Errorf("%s: Allow %q", a, p.header.Get("Allow"))
			}
		}
		// POST on a page: 405.
		wantStatus(t, b.post("queue?q="+url.QueryEscape(f.name), url.Values{"csrf": {tok}}), http.StatusMethodNotAllowed)
		// A purge without its confirmation asks; nothing is purged.
		wantStatus(t, b.post("actions/purge?state=ready&q="+url.QueryEscape(f.name), url.Values{"csrf": {tok}}), http.StatusOK)
		if f.stats(t).Ready != 1 {
			t.Fatal("an unconfirmed purge purged")
		}
	})
}

// A read-only dashboard renders no form or action, refuses every POST
// with 403 even with a token valid for a full dashboard of the same key,
// and refuses the purge confirmation page.
func TestReadOnly(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		key := []byte(strings.Repeat("k", dashboard.MinSecretLen))
		mux := http.NewServeMux()
		mux.Handle("/rw/", http.StripPrefix("/rw", dashboard.New(rdb, dashboard.WithSecret(key))))
		mux.Handle("/ro/", http.StripPrefix("/ro", dashboard.New(rdb, dashboard.WithSecret(key), dashboard.ReadOnly())))
		b := newBrowserOn(t, mux, "/")
		q := url.QueryEscape(f.name)

		refs := []string{"ro/", "ro/item?q=" + q + "&id=o-delayed", "ro/item?q=" + q + "&id=o-dead", "ro/schedules?q=" + q}
		for _, st := range []string{"delayed", "retry", "ready", "inflight", "dead"} {
			refs = append(refs, "ro/queue?q="+q+"&state="+st)
		}
		for _, ref := range refs {
			p := b.get(ref)
			wantStatus(t, p, http.StatusOK)
			for _, bad := range []string{`method="post"`, `data-testid="action-`, `name="csrf"`, `data-testid="confirm"`, `data-testid="select`, `data-testid="bulk`} {
				if strings.Contains(p.body, bad) {
					t.Errorf("read-only %s contains %s", ref, bad)
				}
			}
			if p.header.Get("Set-Cookie") != "" {
				t.Errorf("read-only %s sets a cookie", ref)
			}
			if !strings.Contains(p.body, `data-testid="read-only"`) {
				t.Errorf("read-only %s has no read-only badge", ref)
			}
		}
		wantStatus(t, b.get("ro/purge?state=ready&q="+q), http.StatusForbidden)

		p := b.get("rw/queue?q=" + q)
		tok := tokenOf(t, p)
		for _, a := range []string{"pause", "cancel", "purge"} {
			form := url.Values{"csrf": {tok}, "confirm": {"yes"}}
			wantStatus(t, b.post("ro/actions/"+a+"?state=ready&id=o-ready&q="+q, form), http.StatusForbidden)
		}
		if st := f.stats(t); st.Paused || st.Ready != 1 {
			t.Fatalf("a read-only POST changed the queue: %+v", st)
		}
		// The token is valid: the full dashboard takes it.
		wantStatus(t, b.post("rw/actions/pause?q="+q, url.Values{"csrf": {tok}, "confirm": {"yes"}}), http.StatusSeeOther)
		if !f.stats(t).Paused {
			t.Fatal("not paused")
		}
	})
}

// Names, IDs, values, headers and errors that hold markup are shown as
// text everywhere: overview, queue page, item page, flash.
func TestXSS(t *testing.T) {
	const (
		script = `<script>window.__xss=1</script>`
		img    = `"><img src=x onerror="window.__xss=1">`
	)
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t) + `/?#'..` + script
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
		defer q.Close()
		deadID, readyID := img+"/..?#dead", "../"+script
		headers := map[string]string{script: img}
		if _, err := q.Offer(ctx, script, blocking.WithID(deadID), blocking.WithHeaders(headers)); err != nil {
			t.Fatal(err)
		}
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, 0, blocking.WithReason(errors.New(img+script))); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, img, blocking.WithID(readyID), blocking.WithHeaders(headers)); err != nil {
			t.Fatal(err)
		}
		(&fixture{name: name, rdb: rdb, in: inspect.New(rdb)}).waitAnnounced(t)

		b := newBrowser(t, dashboard.New(rdb), "")
		clean := func(p page) {
			t.Helper()
			wantStatus(t, p, http.StatusOK)
			for _, raw := range []string{script, img, "<script>window", "<img", `onerror="window`} {
				if strings.Contains(p.body, raw) {
					t.Errorf("%s contains %s unescaped", p.url, raw)
				}
			}
		}
		p := b.get("./")
		clean(p)
		row := queueRow(p.body, name)
		if row == "" {
			t.Fatalf("no row for the queue:\n%s", p.body)
		}
		// The link, followed, finds the queue: names travel escaped.
		p = b.follow(p, hrefOf(t, row, "queue-link"))
		clean(p)
		if got, _ := cell(p.body, "queue-name"); got != name {
			t.Errorf("queue page of %q", got)
		}
		for _, st := range []string{"ready", "dead"} {
			p = b.follow(p, hrefOf(t, p.body, "tab-"+st))
			clean(p)
			id := readyID
			if st == "dead" {
				id = deadID
			}
			if ids := itemIDs(p.body); len(ids) != 1 || ids[0] != id {
				t.Fatalf("%s rows %q", st, ids)
			}
			if st == "dead" && !strings.Contains(p.body, "&lt;script&gt;window.__xss=1&lt;/script&gt;") {
				t.Errorf("the value is not shown escaped:\n%s", p.body)
			}
			item := b.follow(p, hrefOf(t, itemRow(p.body, id), "item-link"))
			clean(item)
			if got, _ := cell(item.body, "item-id"); got != id {
				t.Errorf("item page of %q, want %q", got, id)
			}
			if got, _ := cell(item.body, "error-entry"); st == "dead" && !strings.HasPrefix(got, img+script) {
				t.Errorf("error %q", got)
			}
		}
		// An action on the dead letter: its flash names the ID, escaped.
		p = b.followRedirect(b.submit(p, itemRow(p.body, deadID), "action-requeue", nil))
		clean(p)
		wantFlash(t, p, strconv.Quote(deadID))
		// The JSON escapes markup too.
		p = b.get("api/overview?q=" + url.QueryEscape(name))
		if strings.Contains(p.body, "<script>") {
			t.Errorf("JSON with raw markup: %s", p.body)
		}
	})
}

// Every response carries the security headers, and the script and style
// sheet are served from the handler.
func TestSecurityHeaders(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		b := newBrowser(t, dashboard.New(rdb), "")
		want := map[string]string{
			"X-Content-Type-Options": "nosniff",
			"X-Frame-Options":        "DENY",
			"Referrer-Policy":        "same-origin",
		}
		for ref, ct := range map[string]string{
			"./":                    "text/html; charset=utf-8",
			"api/overview":          "application/json",
			"assets/dashboard.js":   "text/javascript; charset=utf-8",
			"assets/dashboard.css":  "text/css; charset=utf-8",
			"queue?q=no-such-queue": "text/html; charset=utf-8",
			"nothing-here":          "text/html; charset=utf-8",
		} {
			p := b.get(ref)
			if got := p.header.Get("Content-Type"); got != ct {
				t.Errorf("%s: Content-Type %q, want %q", ref, got, ct)
			}
			for k, v := range want {
				if got := p.header.Get(k); got != v {
					t.Errorf("%s: %s %q, want %q", ref, k, got, v)
				}
			}
			csp := p.header.Get("Content-Security-Policy")
			for _, d := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:"} {
				if !strings.Contains(csp, d) {
					t.Errorf("%s: CSP %q lacks %s", ref, csp, d)
				}
			}
			if strings.Contains(csp, "unsafe-inline") {
				t.Errorf("%s: CSP %q allows inline code", ref, csp)
			}
		}
		// No inline script or style in the pages.
		p := b.get("./")
		if strings.Contains(p.body, "<script>") || strings.Contains(p.body, "style=") || strings.Contains(p.body, "<style") {
			t.Errorf("inline script or style:\n%s", p.body)
		}
	})
}
