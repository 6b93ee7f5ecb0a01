package dashboard

import (
	"net/http"

	"github.com/redelay/redelay/inspect"
)

// itemPage is the data of an item's page.
type itemPage struct {
	Queue   string
	Item    itemView
	TabURL  string // the queue's tab of the item's state
	IsLease bool   // the item is in flight: show its lease
	Live    string // the JSON of the queue's stats: the page turns stale with them
}

func (p itemPage) liveURL() string { return p.Live }

// item answers an item's page (parameters q and id): every field, the
// headers, the value and the raw bytes, and the actions that apply. The
// exact match of a queue page's find links here.
func (h *handler) item(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	name, err := queueParam(v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	id, err := idParam(v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	it, err := h.in.Get(r.Context(), name, id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l := linksFor(r)
	var csrf string
	if !h.cfg.readOnly {
		csrf = h.csrfToken(w, r)
	}
	back := target{From: fromItem, Queue: name, State: it.State}
	p := itemPage{
		Queue:   name,
		Item:    h.newItemView(l, name, it, back, csrf, true),
		TabURL:  l.Tab(name, it.State, 0, 0),
		IsLease: it.State == inspect.Inflight,
		Live:    l.API(name),
	}
	h.render(w, r, http.StatusOK, "item", id, p)
}
