package dashboard

import (
	"net/http"

	"github.com/redelay/redelay/inspect"
)

// queuePage is the data of a queue's page.
type queuePage struct {
	Name    string
	State   inspect.State // the tab shown
	Stats   inspect.Stats
	Tabs    []tab
	Items   []itemView
	Offset  int
	Limit   int
	Count   int64 // items in the state, as Stats read them
	From    int   // the first item listed, counting from 1; 0 when none is
	To      int
	PrevURL string
	NextURL string
	Back    target // where the page's actions return
	Acts    *queueActs
	Live    string // the JSON of the queue's stats
	History chart
}

// chart is a chart of the processed and failed counts per minute that
// the script draws.
type chart struct {
	Src string // the URL of its JSON
	Of  string // what it counts, when not one queue: "all queues, summed"
}

func (p queuePage) liveURL() string { return p.Live }

// tab is one state's tab on a queue's page.
type tab struct {
	State  inspect.State
	N      int64
	URL    string
	Active bool
}

// queueActs are the URLs the forms of a queue's actions POST to, or
// link to (Purge, which asks to confirm first).
type queueActs struct {
	Pause      string
	Resume     string
	RequeueAll string
	Purge      string
}

// queue answers a queue's page: its stats, a tab per state, and one page
// of the items in the tab's state (parameters q, state, offset, limit).
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
	items, err := h.in.List(r.Context(), name, st, offset, limit)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l := linksFor(r)
	p := queuePage{Name: name, State: st, Stats: stats, Offset: offset, Limit: limit, Count: count(stats, st), Live: l.API(name)}
	p.Back = target{From: fromQueue, Queue: name, State: st, Offset: offset, Limit: limit}
	p.History = chart{Src: l.History(name)}
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
		}
	}
	for _, it := range items {
		p.Items = append(p.Items, h.newItemView(l, name, it, p.Back, csrf, false))
	}
	if len(items) > 0 {
		p.From, p.To = offset+1, offset+len(items)
	}
	if offset > 0 {
		p.PrevURL = l.Tab(name, st, max(0, offset-limit), limit)
	}
	if len(items) == limit && int64(offset+limit) < p.Count {
		p.NextURL = l.Tab(name, st, offset+limit, limit)
	}
	h.render(w, r, http.StatusOK, "queue", name, p)
}
