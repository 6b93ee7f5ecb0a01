package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/redelay/redelay/inspect"
)

// queuePage is the data of a queue's page.
type queuePage struct {
	Name   string
	State  inspect.State // the tab shown
	Stats  inspect.Stats
	Tabs   []tab
	Items  []itemView
	Offset int
	Limit  int
	Count  int64 // items in the state, as Stats read them
	From   int   // the first item listed, counting from 1; 0 when none is
	To     int
	Pager  pager
	Search *search // nil unless the page searches for an ID
	Back   target  // where the page's actions return
	Acts   *queueActs
	Live   string // the JSON of the queue's stats
	// History is the chart of the queue's processed and failed items per
	// minute.
	History   chart
	Consumers []consumerView // the processes consuming the queue
	// Groups are the queue's largest groups (blocking.WithGroup), up to
	// maxGroupsShown.
	Groups []groupView
}

// maxGroupsShown bounds the groups a queue's page lists, largest first.
const maxGroupsShown = 20

// groupView is one group on a queue's page, with the URLs its forms POST
// to ("" when read-only).
type groupView struct {
	inspect.Group
	Pause, Resume string
}

func (p queuePage) liveURL() string { return p.Live }

// chart is a chart of the processed and failed counts per minute that
// the script draws.
type chart struct {
	Src string // the URL of its JSON
	Of  string // what it counts, when not one queue: "all queues, summed"
}

// tab is one state's tab on a queue's page.
type tab struct {
	State  inspect.State
	N      int64
	URL    string
	Active bool
}

// queueActs are the URLs the forms of a queue's actions POST to, or
// link to (Purge, whose page asks to confirm first).
type queueActs struct {
	Pause      string
	Resume     string
	RequeueAll string
	Purge      string
	Bulk       string   // the form of the items selected
	BulkOps    []string // the actions that apply to the tab's items
	Forget     string   // asks to confirm, then forgets the queue; "" unless it holds nothing
}

// queue answers a queue's page: its stats, a tab per state, and one page
// of the items in the tab's state (parameters q, state, offset or page,
// limit), or the items found by ID (parameter find); the processes
// consuming it.
func (h *handler) queue(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	name, err := queueParam(v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st, err := stateParam(v, inspect.Delayed)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	offset, limit, err := pageParams(v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	stats, err := h.in.Stats(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l := linksFor(r)
	p := queuePage{Name: name, State: st, Stats: stats, Offset: offset, Limit: limit, Count: count(stats, st), Live: l.API(name)}
	p.Back = target{From: fromQueue, Queue: name, State: st, Offset: offset, Limit: limit, Find: v.Get("find")}
	p.History = chart{Src: l.History(name)}
	var items []inspect.Item
	if p.Back.Find != "" {
		p.Search, items, err = h.find(r, l, name, st, p.Back.Find, offset, limit, p.Count)
	} else {
		items, err = h.in.List(r.Context(), name, st, offset, limit)
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if p.Consumers, err = h.consumersOf(r, name); err != nil {
		h.fail(w, r, err)
		return
	}
	groups, err := h.in.Groups(r.Context(), name, 0, maxGroupsShown)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	for _, c := range counts(stats) {
		p.Tabs = append(p.Tabs, tab{State: c.State, N: c.N, URL: l.Tab(name, c.State, 0, limit), Active: c.State == st})
	}
	var csrf string
	if !h.cfg.readOnly {
		csrf = h.csrfToken(w, r)
		back := target{From: fromQueue, Queue: name, State: st}
		p.Acts = &queueActs{
			Pause:      l.Act(actPause, p.Back, ""),
			Resume:     l.Act(actResume, p.Back, ""),
			RequeueAll: l.Act(actRequeueAll, back, ""),
			Purge:      l.Purge(name, st),
			Bulk:       l.Act(actBulk, p.Back, ""),
			BulkOps:    bulkOpsOf(st),
		}
		if stats.Delayed+stats.Retry+stats.Ready+stats.Inflight+stats.Dead == 0 {
			p.Acts.Forget = l.Act(actForget, p.Back, "")
		}
	}
	for _, g := range groups {
		gv := groupView{Group: g}
		if p.Acts != nil {
			t := p.Back
			t.Group = g.Key
			gv.Pause, gv.Resume = l.Act(actPauseGroup, t, ""), l.Act(actResumeGroup, t, "")
		}
		p.Groups = append(p.Groups, gv)
	}
	for _, it := range items {
		p.Items = append(p.Items, h.newItemView(l, name, it, p.Back, csrf, false))
	}
	if p.Search != nil && p.Search.Exact != nil {
		ex := h.newItemView(l, name, *p.Search.Exact.it, target{From: fromQueue, Queue: name, State: p.Search.Exact.it.State}, csrf, false)
		p.Search.Exact.View = &ex
	}
	if len(items) > 0 && p.Search == nil {
		p.From, p.To = offset+1, offset+len(items)
	}
	if p.Search == nil {
		p.Pager = newPager(l, name, st, offset, limit, p.Count)
	}
	h.render(w, r, http.StatusOK, "queue", name, p)
}

// bulkOpsOf returns the bulk actions that apply to items in state st, as
// their own buttons do.
func bulkOpsOf(st inspect.State) []string {
	switch st {
	case inspect.Delayed, inspect.Retry:
		return []string{actPromote, actCancel}
	case inspect.Dead:
		return []string{actRequeue, actCancel}
	}
	return []string{actCancel}
}

// searchWindow is how many items of a state one search reads.
const searchWindow = inspect.MaxPage

// search is what a queue's page searched for an ID, and found.
type search struct {
	Find  string
	Exact *exactMatch // the item with that very ID, in any state; nil when there is none
	// ExactNote says why the exact ID was not looked up; "" when it was.
	ExactNote string
	// The window of the tab's state whose IDs were compared with Find as a
	// prefix: items From to To (from 1) of Count.
	From, To int
	Count    int64
	Found    int    // how many of them start with Find
	Shown    int    // how many of those are listed (at most the page's limit)
	NextURL  string // the search of the next window; "" after the last
	ClearURL string // the tab without the search
}

// exactMatch is the item whose ID a search gave whole.
type exactMatch struct {
	it   *inspect.Item
	View *itemView
}

// find searches the queue name for the ID find: the item with that very
// ID wherever it is (inspect.Get), and the items whose IDs start with
// find among searchWindow items of state st from offset (one List), of
// which it returns the first limit. It does not search beyond that
// window: its result says which items it compared and links to the next
// window.
func (h *handler) find(r *http.Request, l links, name string, st inspect.State, find string, offset, limit int, n int64) (*search, []inspect.Item, error) {
	s := &search{Find: find, Count: n, ClearURL: l.Tab(name, st, 0, limit)}
	it, err := h.in.Get(r.Context(), name, find)
	switch {
	case err == nil:
		s.Exact = &exactMatch{it: &it}
	case errors.Is(err, inspect.ErrInvalidArgument):
		s.ExactNote = plain(err)
	case !errors.Is(err, inspect.ErrNotFound):
		return nil, nil, err
	}
	window, err := h.in.List(r.Context(), name, st, offset, searchWindow)
	if err != nil {
		return nil, nil, err
	}
	if len(window) > 0 {
		s.From, s.To = offset+1, offset+len(window)
	}
	found := slices.DeleteFunc(window, func(it inspect.Item) bool { return !strings.HasPrefix(it.ID, find) })
	s.Found = len(found)
	found = found[:min(len(found), limit)]
	s.Shown = len(found)
	if len(window) == searchWindow && int64(offset+searchWindow) < n {
		s.NextURL = l.Find(name, st, find, offset+searchWindow, limit)
	}
	return s, found, nil
}
