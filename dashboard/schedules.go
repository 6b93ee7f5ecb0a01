package dashboard

import (
	"net/http"

	"github.com/redelay/redelay/inspect"
)

// schedulesPage is the data of a queue's schedules page.
type schedulesPage struct {
	Queue     string
	QueueURL  string
	Schedules []scheduleRow
	Live      string // the JSON of the queue's stats: the page turns stale with them
}

// scheduleRow is one schedule, and the URLs its forms POST to ("" when
// read-only).
type scheduleRow struct {
	inspect.ScheduleInfo
	Run    string // runs it once now
	Remove string // asks to confirm, then removes it
}

func (p schedulesPage) liveURL() string { return p.Live }

// schedules answers the page of a queue's recurring schedules (parameter
// q): name, spec, zone, missed-tick policy, next tick (flagged when
// overdue) and last tick; unless read-only, a button to run each now and
// one to remove it.
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
	p := schedulesPage{Queue: name, QueueURL: l.Queue(name), Live: l.API(name)}
	for _, info := range infos {
		row := scheduleRow{ScheduleInfo: info}
		if !h.cfg.readOnly {
			t := target{From: fromSchedules, Queue: name, Schedule: info.Name}
			row.Run, row.Remove = l.Act(actRunSched, t, ""), l.Act(actUnschedule, t, "")
		}
		p.Schedules = append(p.Schedules, row)
	}
	h.render(w, r, http.StatusOK, "schedules", "Schedules of "+name, p)
}
