package dashboard

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/redelay/redelay/inspect"
)

// defaultHistoryMinutes is how many minutes api/history covers without
// the parameter minutes.
const defaultHistoryMinutes = 60

// maxHistoryMinutes is the most api/history covers: what Redis keeps.
const maxHistoryMinutes = int(inspect.HistoryWindow / time.Minute)

// historyJSON is the JSON of api/history: the processed and failed counts
// per minute of one queue, or summed over every queue, and each queue's
// last complete minute.
type historyJSON struct {
	Time    time.Time `json:"time"`
	Minutes int       `json:"minutes"`
	// Samples are one per minute, oldest first, the last the minute under
	// way (by the Redis server's clock): at most Minutes of them.
	Samples []sampleJSON    `json:"samples"`
	Queues  []queueRateJSON `json:"queues"`
}

// sampleJSON is one minute of history.
type sampleJSON struct {
	At        time.Time `json:"at"` // the start of the minute, UTC
	Processed int64     `json:"processed"`
	Failed    int64     `json:"failed"`
}

// queueRateJSON is one queue's last complete minute in api/history.
type queueRateJSON struct {
	Name       string      `json:"name"`
	LastMinute *sampleJSON `json:"last_minute,omitempty"` // absent when the history could not be read
	Error      string      `json:"error,omitempty"`
}

// queueHistory is one queue's history, or why it could not be read.
type queueHistory struct {
	samples []inspect.Sample
	err     error
}

// apiHistory answers the processed and failed counts per minute over the
// last minutes (parameter minutes, 1 to 1440, default 60) of the queue q
// (404 when there is no such queue), or of every queue summed, with each
// queue's last complete minute. Each queue's history costs three round
// trips (inspect.History); the queues are read statsWorkers at a time.
func (h *handler) apiHistory(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	minutes, err := intParam(v, "minutes", defaultHistoryMinutes, 1, maxHistoryMinutes)
	if err != nil {
		status, msg := h.classify(r, err)
		writeJSON(w, status, errorJSON{Error: msg})
		return
	}
	names := []string{v.Get("q")}
	if names[0] == "" {
		if names, err = h.in.Queues(r.Context()); err != nil {
			status, msg := h.classify(r, err)
			writeJSON(w, status, errorJSON{Error: msg})
			return
		}
	}
	// Two minutes at least: the last complete one is the one before the
	// minute under way.
	since := time.Now().Add(-time.Duration(max(minutes, 2)) * time.Minute)
	got := h.histories(r.Context(), names, since)
	if v.Get("q") != "" && got[0].err != nil {
		status, msg := h.classify(r, got[0].err)
		writeJSON(w, status, errorJSON{Error: msg})
		return
	}
	out := historyJSON{Time: time.Now().UTC(), Minutes: minutes, Queues: make([]queueRateJSON, len(names))}
	sum := map[int64]*sampleJSON{} // by minute
	for i, name := range names {
		out.Queues[i].Name = name
		if err := got[i].err; err != nil {
			_, out.Queues[i].Error = h.classify(r, err)
			continue
		}
		s := got[i].samples
		if n := len(s); n >= 2 {
			out.Queues[i].LastMinute = &sampleJSON{At: s[n-2].At.UTC(), Processed: s[n-2].Processed, Failed: s[n-2].Failed}
		}
		for _, m := range s {
			k := m.At.Unix() / 60
			if sum[k] == nil {
				sum[k] = &sampleJSON{At: m.At.UTC()}
			}
			sum[k].Processed += m.Processed
			sum[k].Failed += m.Failed
		}
	}
	out.Samples = make([]sampleJSON, 0, len(sum))
	for _, s := range sum {
		out.Samples = append(out.Samples, *s)
	}
	sort.Slice(out.Samples, func(i, j int) bool { return out.Samples[i].At.Before(out.Samples[j].At) })
	if len(out.Samples) > minutes {
		out.Samples = out.Samples[len(out.Samples)-minutes:]
	}
	writeJSON(w, http.StatusOK, out)
}

// histories reads the history of each queue of names since since.
func (h *handler) histories(ctx context.Context, names []string, since time.Time) []queueHistory {
	out := make([]queueHistory, len(names))
	each(len(names), func(i int) {
		out[i].samples, out[i].err = h.in.History(ctx, names[i], since)
	})
	return out
}
