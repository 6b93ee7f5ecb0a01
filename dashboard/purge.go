package dashboard

import (
	"fmt"
	"net/http"

	"github.com/redelay/redelay/inspect"
)

// purgePage is the data of the page that asks to confirm a purge.
type purgePage struct {
	Queue  string
	State  inspect.State
	Count  int64
	Action string // the URL the confirming form POSTs to
	Back   string // the queue's tab, to go back without purging
	Live   string // the JSON of the queue's stats: the page turns stale with them
}

func (p purgePage) liveURL() string { return p.Live }

// purgeConfirm answers the page that asks to confirm the purge of a
// queue's items in one state (parameters q and state): it changes
// nothing; its form POSTs the purge with confirm=yes. Read-only: 403.
func (h *handler) purgeConfirm(w http.ResponseWriter, r *http.Request) {
	if h.cfg.readOnly {
		h.renderError(w, r, http.StatusForbidden, "This dashboard is read-only.")
		return
	}
	v := r.URL.Query()
	name, err := queueParam(v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	st, err := stateParam(v, "")
	if err == nil && st == "" {
		err = fmt.Errorf("missing state to purge (parameter state): %w", errBadInput)
	}
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
	back := target{From: fromQueue, Queue: name, State: st}
	p := purgePage{
		Queue:  name,
		State:  st,
		Count:  count(stats, st),
		Action: l.Act(actPurge, back, ""),
		Back:   l.Tab(name, st, 0, 0),
		Live:   l.API(name),
	}
	h.render(w, r, http.StatusOK, "purge", "Purge", p)
}
