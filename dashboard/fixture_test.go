package dashboard_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// Order is the value type of the queues under test.
type Order struct {
	ID    string
	Total int
}

// fixture is a queue holding one item in each state, by ID
// (seedtest.EveryState), each of value Order{ID: id, Total: 42}.
type fixture struct {
	name string
	rdb  redis.UniversalClient
	q    *blocking.Queue[Order]
	dq   *delayed.Queue[Order]
	in   *inspect.Inspector
}

// populate makes the fixture's queue and returns once it is announced in
// the registry of queues with its codec (so it is on the overview and its
// values decode).
func populate(t *testing.T, rdb redis.UniversalClient) *fixture {
	t.Helper()
	return populateNamed(t, rdb, redistest.QueueName(t))
}

// populateNamed is populate with a queue called name.
func populateNamed(t *testing.T, rdb redis.UniversalClient, name string) *fixture {
	t.Helper()
	s := seedtest.EveryState(t, rdb, name, func(id string) Order { return Order{ID: id, Total: 42} })
	f := &fixture{name: name, rdb: rdb, q: s.Queue, dq: s.Delayed, in: inspect.New(rdb)}
	f.waitAnnounced(t)
	return f
}

// waitAnnounced waits until the queue is in the registry with its codec.
func (f *fixture) waitAnnounced(t *testing.T) {
	t.Helper()
	redistest.WaitFor(t, 10*time.Second, "the queue announced", func() bool {
		names, err := f.in.Queues(context.Background())
		return err == nil && slices.Contains(names, f.name)
	})
	seedtest.WaitCodec(t, f.rdb, f.name, "")
}

// stats reads the queue's stats.
func (f *fixture) stats(t *testing.T) inspect.Stats {
	t.Helper()
	st, err := f.in.Stats(context.Background(), f.name)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// browser is an HTTP client of a dashboard mounted on a test server: it
// keeps cookies and does not follow redirects.
type browser struct {
	t     *testing.T
	mount *url.URL // where relative URLs start: the dashboard's mount point
	c     *http.Client
}

// newBrowser serves h at prefix ("" for the root, or "/admin" for
// "/admin/" with http.StripPrefix) on a test server closed at cleanup.
func newBrowser(t *testing.T, h http.Handler, prefix string) *browser {
	t.Helper()
	mux := http.NewServeMux()
	if prefix == "" {
		mux.Handle("/", h)
	} else {
		mux.Handle(prefix+"/", http.StripPrefix(prefix, h))
	}
	return newBrowserOn(t, mux, prefix+"/")
}

// newBrowserOn serves mux on a test server closed at cleanup, and returns
// a browser whose relative URLs start at mount.
func newBrowserOn(t *testing.T, mux http.Handler, mount string) *browser {
	t.Helper()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := *srv.Client()
	c.Jar = jar
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	u, err := url.Parse(srv.URL + mount)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, mount: u, c: &c}
}

// page is one response.
type page struct {
	url    *url.URL
	status int
	header http.Header
	body   string
}

// resolve returns ref relative to the mount point.
func (b *browser) resolve(ref string) *url.URL {
	b.t.Helper()
	u, err := b.mount.Parse(ref)
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// get requests ref (relative to the mount point) with GET.
func (b *browser) get(ref string) page {
	b.t.Helper()
	return b.do(http.MethodGet, b.resolve(ref), nil)
}

// follow requests the URL ref found on p (relative to p).
func (b *browser) follow(p page, ref string) page {
	b.t.Helper()
	u, err := p.url.Parse(ref)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(http.MethodGet, u, nil)
}

// post sends form to ref (relative to the mount point).
func (b *browser) post(ref string, form url.Values) page {
	b.t.Helper()
	return b.do(http.MethodPost, b.resolve(ref), form)
}

func (b *browser) do(method string, u *url.URL, form url.Values) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u.String(), body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return page{url: u, status: res.StatusCode, header: res.Header, body: string(data)}
}

// submit finds, in scope (a part of p's body), the POST form that holds
// the button (or link) data-testid=testid, and sends it with its hidden
// fields and extra. It fails the test when there is no such form.
func (b *browser) submit(p page, scope, testid string, extra url.Values) page {
	b.t.Helper()
	action, hidden, ok := formOf(scope, testid)
	if !ok {
		b.t.Fatalf("no form with %s on %s:\n%s", testid, p.url, scope)
	}
	for k, vs := range extra {
		hidden[k] = vs
	}
	u, err := p.url.Parse(action)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.do(http.MethodPost, u, hidden)
}

// followRedirect follows the 303 that p is, checking that it is one.
func (b *browser) followRedirect(p page) page {
	b.t.Helper()
	if p.status != http.StatusSeeOther {
		b.t.Fatalf("%s: status %d, want 303:\n%s", p.url, p.status, p.body)
	}
	return b.follow(p, p.header.Get("Location"))
}

var (
	reHidden = regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`)
	reAction = regexp.MustCompile(`<form method="post" action="([^"]*)"`)
	reHref   = regexp.MustCompile(`href="([^"]*)"`)
)

// formOf returns the action and hidden fields of the POST form in s that
// holds testid.
func formOf(s, testid string) (string, url.Values, bool) {
	for _, chunk := range strings.Split(s, "<form ")[1:] {
		chunk = "<form " + chunk
		end := strings.Index(chunk, "</form>")
		if end < 0 || !strings.Contains(chunk[:end], `data-testid="`+testid+`"`) {
			continue
		}
		chunk = chunk[:end]
		m := reAction.FindStringSubmatch(chunk)
		if m == nil {
			continue
		}
		v := url.Values{}
		for _, h := range reHidden.FindAllStringSubmatch(chunk, -1) {
			v.Add(html.UnescapeString(h[1]), html.UnescapeString(h[2]))
		}
		return html.UnescapeString(m[1]), v, true
	}
	return "", nil, false
}

// hrefOf returns the href of the element in s with data-testid=testid.
func hrefOf(t *testing.T, s, testid string) string {
	t.Helper()
	i := strings.Index(s, `data-testid="`+testid+`"`)
	if i < 0 {
		t.Fatalf("no %s in:\n%s", testid, s)
	}
	start := strings.LastIndex(s[:i], "<")
	end := strings.Index(s[i:], ">")
	m := reHref.FindStringSubmatch(s[start : i+end])
	if m == nil {
		t.Fatalf("%s has no href", testid)
	}
	return html.UnescapeString(m[1])
}

// section returns the part of s from the element whose opening tag has
// the attributes attrs to the end tag closing it (the next "</tag>").
func section(s, tag, attrs string) string {
	i := strings.Index(s, "<"+tag+" "+attrs)
	if i < 0 {
		return ""
	}
	end := strings.Index(s[i:], "</"+tag+">")
	if end < 0 {
		return s[i:]
	}
	return s[i : i+end]
}

// queueRow returns the overview's row of the queue name.
func queueRow(s, name string) string {
	return section(s, "tr", `data-testid="queue-row" data-queue="`+html.EscapeString(name)+`"`)
}

// itemRow returns the queue page's row of the item id.
func itemRow(s, id string) string {
	return section(s, "tr", `data-testid="item-row" data-id="`+html.EscapeString(id)+`"`)
}

var reItemRow = regexp.MustCompile(`data-testid="item-row" data-id="([^"]*)"`)

// itemIDs returns the IDs of the item rows in s, in order.
func itemIDs(s string) []string {
	var ids []string
	for _, m := range reItemRow.FindAllStringSubmatch(s, -1) {
		ids = append(ids, html.UnescapeString(m[1]))
	}
	return ids
}

// cell returns the text of the element with data-testid=testid in s: what
// is between its tags, tags inside removed, unescaped.
func cell(s, testid string) (string, bool) {
	i := strings.Index(s, `data-testid="`+testid+`"`)
	if i < 0 {
		return "", false
	}
	open := strings.LastIndex(s[:i], "<")
	name := s[open+1:]
	name = name[:strings.IndexAny(name, " >")]
	rest := s[i:]
	start := strings.Index(rest, ">") + 1
	end := strings.Index(rest, "</"+name+">")
	if end < start {
		return "", false
	}
	return html.UnescapeString(reTag.ReplaceAllString(rest[start:end], "")), true
}

var reTag = regexp.MustCompile(`<[^>]*>`)

// wantStatus fails the test unless p has status.
func wantStatus(t *testing.T, p page, status int) {
	t.Helper()
	if p.status != status {
		t.Fatalf("%s: status %d, want %d:\n%s", p.url, p.status, status, p.body)
	}
}
