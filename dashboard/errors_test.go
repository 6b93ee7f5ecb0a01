package dashboard_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
)

// A missing queue or item is a 404 page with a one-line message.
func TestNotFound(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		q := url.QueryEscape(f.name)
		missing := url.QueryEscape(f.name + "-missing")
		p := b.get("./")
		tok := tokenOf(t, p)
		for _, ref := range []string{
			"queue?q=" + missing,
			"queue?q=" + missing + "&state=dead",
			"item?q=" + missing + "&id=o-ready",
			"item?q=" + q + "&id=nobody",
			"schedules?q=" + missing,
			"purge?q=" + missing + "&state=ready",
			"nothing-here",
			"queue/extra",
			"assets/nothing.js",
		} {
			p := b.get(ref)
			wantStatus(t, p, http.StatusNotFound)
			msg, ok := cell(p.body, "error")
			if !ok || msg == "" || strings.Contains(msg, "\n") {
				t.Errorf("%s: message %q", ref, msg)
			}
		}
		wantStatus(t, b.post("actions/nothing?q="+q, url.Values{"csrf": {tok}}), http.StatusNotFound)
		// An action on what is not there returns to the page it came from,
		// or the nearest that still exists, saying so in plain words.
		for ref, want := range map[string]struct{ page, msg string }{
			"actions/promote?q=" + q + "&id=nobody&state=delayed": {"/queue",
				`Could not promote item "nobody": no item "nobody" (it may have been taken, settled or cancelled meanwhile).`},
			"actions/promote?q=" + q + "&id=nobody&from=item": {"/queue",
				`Could not promote item "nobody": no item "nobody" (it may have been taken, settled or cancelled meanwhile).`},
			"actions/cancel?q=" + q + "&id=nobody": {"/queue",
				`Could not cancel item "nobody": no item "nobody" (it may have been taken, settled or cancelled meanwhile).`},
			"actions/requeue?q=" + q + "&id=o-ready&state=dead": {"/queue",
				`Could not requeue item "o-ready": item "o-ready" is ready, not dead.`},
			"actions/pause?q=" + missing: {"/",
				`Could not pause queue "` + f.name + `-missing": no such queue (not in the registry of queues, no keys).`},
		} {
			r := b.post(ref, url.Values{"csrf": {tok}})
			p := b.followRedirect(r)
			wantStatus(t, p, http.StatusOK)
			got, _ := cell(p.body, "action-error")
			if p.url.Path != want.page || got != want.msg {
				t.Errorf("%s: on %s: %q\nwant on %s: %q", ref, p.url.Path, got, want.page, want.msg)
			}
		}
	})
}

// Bad input is a 400 page that says what is wrong.
func TestBadInput(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		q := url.QueryEscape(f.name)
		for ref, want := range map[string]string{
			"queue":                                           "missing queue name",
			"queue?q=" + q + "&state=done":                    `unknown state "done"`,
			"queue?q=" + q + "&offset=-1":                     "parameter offset",
			"queue?q=" + q + "&offset=x":                      "parameter offset",
			"queue?q=" + q + "&limit=0":                       "parameter limit",
			"queue?q=" + q + "&limit=1001":                    "parameter limit",
			"queue?q=bad{name}":                               "invalid queue name",
			"item?q=" + q:                                     "missing item ID",
			"item?q=" + q + "&id=" + strings.Repeat("x", 300): "id of 300 bytes",
			"purge?q=" + q:                                    "missing state",
			"purge?q=" + q + "&state=nope":                    "unknown state",
			"schedules":                                       "missing queue name",
		} {
			p := b.get(ref)
			wantStatus(t, p, http.StatusBadRequest)
			if msg, _ := cell(p.body, "error"); !strings.Contains(msg, want) {
				t.Errorf("%s: message %q, want %q", ref, msg, want)
			}
		}
		p := b.get("item?q=" + q + "&id=o-delayed")
		// An action's bad input is said on the page the form was on, in
		// plain words.
		for due, want := range map[string]string{
			"soon":                 "neither a duration",
			"-5m":                  "negative duration",
			"":                     "missing new due time",
			"1e9h":                 "neither a duration", // out of range for a duration
			"3000-01-01T00:00:00Z": "",                   // a time Redis cannot hold
		} {
			r := b.followRedirect(b.submit(p, p.body, "action-reschedule", url.Values{"due": {due}}))
			msg, _ := cell(r.body, "action-error")
			if r.url.Path != "/item" || !strings.HasPrefix(msg, `Could not reschedule item "o-delayed": `) || !strings.Contains(msg, want) ||
				strings.Contains(msg, "bad request") || strings.Contains(msg, "redelay:") {
				t.Errorf("due %q: on %s, message %q, want %q", due, r.url.Path, msg, want)
			}
		}
		if st := f.stats(t); st.Delayed != 1 || st.Ready != 1 {
			t.Fatalf("bad input changed the queue: %+v", st)
		}
	})
}

// When Redis cannot be reached the pages answer 502 with a fixed message
// and the error goes to the log: the page shows neither the error's text
// nor the password; its header names the server by the address the
// client was given, as on every page.
func TestRedisError(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{
		Addr:          "redis.internal:6379",
		Password:      "hunter2",
		MaxRetries:    -1,
		DialerRetries: 1,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("dial tcp redis.internal:6379: connect: connection refused")
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	logged := &syncWriter{b: &strings.Builder{}}
	logger := slog.New(slog.NewTextHandler(logged, nil))
	b := newBrowser(t, dashboard.New(rdb, dashboard.WithLogger(logger), dashboard.WithTitle("Acme queues")), "")
	for _, ref := range []string{"./", "queue?q=orders", "item?q=orders&id=1", "schedules?q=orders", "consumers", "redis", "api/overview", "api/history"} {
		p := b.get(ref)
		wantStatus(t, p, http.StatusBadGateway)
		body := strings.Replace(p.body, `<code>redis.internal:6379</code></a>`, "", 1)
		if strings.Contains(body, "redis.internal") || strings.Contains(body, "refused") || strings.Contains(body, "hunter2") {
			t.Errorf("%s shows the Redis error: %s", ref, p.body)
		}
		if got, _ := cell(p.body, "server"); !strings.HasPrefix(ref, "api/") && got != "Redis redis.internal:6379" {
			t.Errorf("%s: the header names the server %q", ref, got)
		}
		if !strings.HasPrefix(ref, "api/") && !strings.Contains(p.body, `data-testid="home-link">Acme queues</a>`) {
			t.Errorf("%s without the title:\n%s", ref, p.body)
		}
	}
	if !strings.Contains(logged.String(), "redis.internal:6379") {
		t.Errorf("the error is not logged: %q", logged.String())
	}
}

// A bad option makes every request answer 500.
func TestBadOptions(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	for name, h := range map[string]http.Handler{
		"short secret": dashboard.New(rdb, dashboard.WithSecret([]byte("short"))),
		"nil logger":   dashboard.New(rdb, dashboard.WithLogger(nil)),
		"nil option":   dashboard.New(rdb, nil),
		"nil client":   dashboard.New(nil),
		"ring":         dashboard.New(&redis.Ring{}),
	} {
		b := newBrowser(t, h, "")
		if p := b.get("./"); p.status != http.StatusInternalServerError {
			t.Errorf("%s: status %d", name, p.status)
		}
	}
}

// syncWriter is a strings.Builder safe to write from the server's
// goroutines and read from the test's.
type syncWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
