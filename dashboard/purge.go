package dashboard

import (
	"net/http"
)

// purgeConfirm answers the page that asks to confirm the purge of a
// queue's items in one state (parameters q and state), which a queue's
// Purge link opens: it changes nothing; its form POSTs the purge with
// confirm=yes. Read-only: 403.
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
	st, err := purgeState(v)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p, err := h.confirmData(r, actPurge, target{From: fromQueue, Queue: name, State: st}, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "confirm", p.Question, p)
}
