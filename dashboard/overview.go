package dashboard

import (
	"net/http"
	"time"

	"github.com/redelay/redelay/inspect"
)

// overviewPage is the data of the overview.
type overviewPage struct {
	Rows   []overviewRow
	Totals []stateCount
	Live   string // the JSON of every queue's stats
}

func (p overviewPage) liveURL() string { return p.Live }

// overviewRow is one queue on the overview.
type overviewRow struct {
	Name    string
	Err     bool // its stats could not be read (the error is logged)
	Counts  []stateCount
	Paused  bool
	Latency time.Duration
	NextDue time.Time
	URL     string
	Pause   string // the URL of its pause or resume action; "" when read-only
}

// overview answers the overview of every queue: counts by state, pause,
// latency and next due time, and the chart the script draws.
func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	names, err := h.in.Queues(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l := linksFor(r)
	stats := h.collect(r.Context(), names)
	page := overviewPage{Rows: make([]overviewRow, 0, len(stats)), Live: l.API("")}
	var total inspect.Stats
	for _, s := range stats {
		row := overviewRow{Name: s.Name, URL: l.Queue(s.Name)}
		if s.Err != nil {
			h.classify(r, s.Err) // logs it
			row.Err = true
			page.Rows = append(page.Rows, row)
			continue
		}
		st := s.Stats
		row.Counts, row.Paused, row.Latency, row.NextDue = counts(st), st.Paused, st.Latency, st.NextDue
		if !h.cfg.readOnly {
			act := actPause
			if st.Paused {
				act = actResume
			}
			row.Pause = l.Act(act, target{From: fromOverview, Queue: s.Name}, "")
		}
		total.Delayed += st.Delayed
		total.Retry += st.Retry
		total.Ready += st.Ready
		total.Inflight += st.Inflight
		total.Dead += st.Dead
		page.Rows = append(page.Rows, row)
	}
	page.Totals = counts(total)
	h.render(w, r, http.StatusOK, "overview", "Queues", page)
}
