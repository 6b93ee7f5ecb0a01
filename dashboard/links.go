package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/redelay/redelay/inspect"
)

// links builds the URLs of the dashboard's pages, relative to the page
// being answered, so that the dashboard works wherever it is mounted.
// Queue names and IDs travel as query parameters, escaped with
// url.Values: they may hold '/', '?', '#', quotes, or be "..".
type links struct {
	base string // from the page answered to the mount point: "./", "../", ...
}

// linksFor returns the links of the page answering r.
func linksFor(r *http.Request) links {
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	n := strings.Count(p, "/")
	if n == 0 {
		return links{base: "./"}
	}
	return links{base: strings.Repeat("../", n)}
}

// to returns the URL of page with the query v. Every URL starts with the
// base, so that a ':' in it never reads as a scheme.
func (l links) to(page string, v url.Values) string {
	u := l.base + page
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	return u
}

// Overview is the overview of every queue.
func (l links) Overview() string { return l.base }

// Path is a page's URL without a query, for the action of a GET form.
func (l links) Path(page string) string { return l.base + page }

// Asset is the URL of an embedded asset.
func (l links) Asset(name string) string { return l.base + "assets/" + name }

// API is the URL of the overview's JSON; of one queue when queue is not
// empty.
func (l links) API(queue string) string {
	v := url.Values{}
	if queue != "" {
		v.Set("q", queue)
	}
	return l.to("api/overview", v)
}

// History is the URL of the JSON of the processed and failed counts per
// minute: of every queue summed, or of queue when it is not empty.
func (l links) History(queue string) string {
	v := url.Values{}
	if queue != "" {
		v.Set("q", queue)
	}
	return l.to("api/history", v)
}

// Queue is the page of a queue, on its default tab.
func (l links) Queue(queue string) string {
	return l.to("queue", url.Values{"q": {queue}})
}

// Tab is one page of a queue's items in state st: from offset, limit at a
// time (0 for the defaults).
func (l links) Tab(queue string, st inspect.State, offset, limit int) string {
	v := url.Values{"q": {queue}, "state": {string(st)}}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if limit > 0 && limit != defaultLimit {
		v.Set("limit", strconv.Itoa(limit))
	}
	return l.to("queue", v)
}

// Item is the page of one item.
func (l links) Item(queue, id string) string {
	return l.to("item", url.Values{"q": {queue}, "id": {id}})
}

// Schedules is the page of a queue's recurring schedules.
func (l links) Schedules(queue string) string {
	return l.to("schedules", url.Values{"q": {queue}})
}

// Find is a queue's page searching the items in state st for IDs that
// start with find, from offset, limit at a time.
func (l links) Find(queue string, st inspect.State, find string, offset, limit int) string {
	return l.Page(target{Queue: queue, State: st, Find: find, Offset: offset, Limit: limit})
}

// Purge is the page that asks to confirm the purge of a queue's items in
// state st.
func (l links) Purge(queue string, st inspect.State) string {
	return l.to("purge", url.Values{"q": {queue}, "state": {string(st)}})
}

// Act is the URL a form POSTs to for the action name on item id (none when
// empty) of back's queue; back is the page to return to.
func (l links) Act(name string, back target, id string) string {
	return l.to("actions/"+name, back.values(id))
}

// target is what an action acts on, and the page it returns to: the
// overview, a queue's page (a tab and page of it) or an item's page.
type target struct {
	From   string // fromOverview, fromQueue or fromItem
	Queue  string
	State  inspect.State // the tab shown, or the item's state
	Offset int
	Limit  int
	Find   string // the ID or prefix a queue's page was searching for
	// Schedule names the recurring schedule an action on the schedules
	// page acts on.
	Schedule string
	// Group names the group of the queue an action acts on
	// (PauseGroup, ResumeGroup).
	Group string
}

// The pages an action returns to.
const (
	fromOverview = "overview"
	fromQueue    = "queue"
	fromItem     = "item"
	// fromSchedules is the queue's schedules page.
	fromSchedules = "schedules"
)

// values encodes t, with the item id when not empty, as query parameters.
func (t target) values(id string) url.Values {
	v := url.Values{"q": {t.Queue}}
	if t.From != "" && t.From != fromQueue {
		v.Set("from", t.From)
	}
	if id != "" {
		v.Set("id", id)
	}
	if t.State != "" {
		v.Set("state", string(t.State))
	}
	if t.Offset > 0 {
		v.Set("offset", strconv.Itoa(t.Offset))
	}
	if t.Limit > 0 && t.Limit != defaultLimit {
		v.Set("limit", strconv.Itoa(t.Limit))
	}
	if t.Find != "" {
		v.Set("find", t.Find)
	}
	if t.Schedule != "" {
		v.Set("schedule", t.Schedule)
	}
	if t.Group != "" {
		v.Set("group", t.Group)
	}
	return v
}

// Page is the URL of t's queue page: its tab, page and search.
func (l links) Page(t target) string {
	v := t.values("")
	v.Del("from")
	return l.to("queue", v)
}

// addSlash redirects a request for the mount point without its trailing
// slash (http.StripPrefix("/admin", h) asked for "/admin") to the same with
// it: relative links resolve from the slash. It reports whether it did.
func (h *handler) addSlash(w http.ResponseWriter, r *http.Request) bool {
	if r.URL.Path != "" {
		return false
	}
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return false
	}
	p := u.EscapedPath()
	if p == "" || strings.HasSuffix(p, "/") {
		return false
	}
	loc := "./" + p[strings.LastIndex(p, "/")+1:] + "/"
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	w.Header().Set("Location", loc)
	w.WriteHeader(http.StatusMovedPermanently)
	return true
}
