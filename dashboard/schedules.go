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
	Live      string // the JSON of the queue's stats: the page turns stale with them
}

func (p schedulesPage) liveURL() string { return p.Live }

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
	l := linksFor(r)
	p := schedulesPage{Queue: name, QueueURL: l.Queue(name), Schedules: infos, Live: l.API(name)}
	h.render(w, r, http.StatusOK, "schedules", "Schedules of "+name, p)
}
