package dashboard

import (
	"net/http"
	"time"

	"github.com/redelay/redelay/inspect"
)

// overviewPage is the data of the overview.
type overviewPage struct {
	Rows    []overviewRow
	Totals  []stateCount
	Total   inspect.Stats // of every queue whose stats could be read: Processed and Failed summed
	Live    string        // the JSON of every queue's stats
	History chart         // of every queue, summed
}

func (p overviewPage) liveURL() string { return p.Live }

// overviewRow is one queue on the overview.
type overviewRow struct {
	Name      string
	Err       bool // its stats could not be read (the error is logged)
	Counts    []stateCount
	Processed int64
	Failed    int64
	Paused    bool
	Latency   time.Duration
	NextDue   time.Time
	URL       string
	Pause     string // the URL of its pause or resume action; "" when read-only
}

// overview answers the overview of every queue: counts by state, pause,
// latency, next due time, processed and failed totals, and the charts the
// script draws.
func (h *handler) overview(w http.ResponseWriter, r *http.Request) {
	stats, err := h.allStats(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l := linksFor(r)
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
		row.Processed, row.Failed = st.Processed, st.Failed
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
		total.Processed += st.Processed
		total.Failed += st.Failed
		page.Rows = append(page.Rows, row)
	}
	page.Totals, page.Total = counts(total), total
	page.History = chart{Src: l.History(""), Of: "all queues, summed"}
	h.render(w, r, http.StatusOK, "overview", "Queues", page)
}
