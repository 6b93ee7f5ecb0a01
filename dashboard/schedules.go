package dashboard

import (
	"net/http"

	"github.com/redelay/redelay/inspect"
)

// schedulesPage is the data of a queue's schedules page.
type schedulesPage struct {
	Queue     string
	QueueURL  string
	Schedules []inspect.ScheduleInfo
}

// schedules answers the page of a queue's recurring schedules (parameter
// q): name, spec, zone, missed-tick policy, next tick (flagged when
// overdue) and last tick.
func (h *handler) schedules(w http.ResponseWriter, r *http.Request) {
	name, err := queueParam(r.URL.Query())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	infos, err := h.in.Schedules(r.Context(), name)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := schedulesPage{Queue: name, QueueURL: linksFor(r).Queue(name), Schedules: infos}
	h.render(w, r, http.StatusOK, "schedules", "Schedules of "+name, p)
}
