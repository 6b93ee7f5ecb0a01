package dashboard

import (
	"encoding/json"
	"net/http"
	"time"
)

// overviewJSON is the JSON the script polls: the stats of every queue (or
// of the queue named by the parameter q) at one moment.
type overviewJSON struct {
	Time   time.Time   `json:"time"`
	Queues []queueJSON `json:"queues"`
}

// queueJSON is one queue's stats in the JSON.
type queueJSON struct {
	Name      string `json:"name"`
	Delayed   int64  `json:"delayed"`
	Retry     int64  `json:"retry"`
	Ready     int64  `json:"ready"`
	Inflight  int64  `json:"inflight"`
	Dead      int64  `json:"dead"`
	Processed int64  `json:"processed"` // settled successfully since the queue was first used
	Failed    int64  `json:"failed"`    // failed attempts since the queue was first used
	// DeadDropped counts the dead letters dropped to keep within the
	// queue's dead-letter bounds; absent when none was.
	DeadDropped int64   `json:"dead_dropped,omitempty"`
	Paused      bool    `json:"paused"`
	LatencyMS   float64 `json:"latency_ms"`
	NextDue     string  `json:"next_due,omitempty"` // RFC 3339; absent when nothing is pending
	Error       string  `json:"error,omitempty"`    // the stats could not be read
}

// errorJSON is the JSON of a failed request.
type errorJSON struct {
	Error string `json:"error"`
}

// apiOverview answers the JSON of the overview: every queue's stats, or
// one queue's with the parameter q (404 when there is no such queue).
func (h *handler) apiOverview(w http.ResponseWriter, r *http.Request) {
	var stats []queueStats
	if name := r.URL.Query().Get("q"); name != "" {
		st, err := h.in.Stats(r.Context(), name)
		if err != nil {
			status, msg := h.classify(r, err)
			writeJSON(w, status, errorJSON{Error: msg})
			return
		}
		stats = []queueStats{{Name: name, Stats: st}}
	} else {
		all, err := h.allStats(r.Context())
		if err != nil {
			status, msg := h.classify(r, err)
			writeJSON(w, status, errorJSON{Error: msg})
			return
		}
		stats = all
	}
	out := overviewJSON{Time: time.Now().UTC(), Queues: make([]queueJSON, 0, len(stats))}
	for _, s := range stats {
		q := queueJSON{Name: s.Name}
		if s.Err != nil {
			_, q.Error = h.classify(r, s.Err)
		} else {
			st := s.Stats
			q.Delayed, q.Retry, q.Ready, q.Inflight, q.Dead = st.Delayed, st.Retry, st.Ready, st.Inflight, st.Dead
			q.Processed, q.Failed, q.DeadDropped = st.Processed, st.Failed, st.DeadDropped
			q.Paused = st.Paused
			q.LatencyMS = float64(st.Latency) / float64(time.Millisecond)
			if !st.NextDue.IsZero() {
				q.NextDue = st.NextDue.UTC().Format(time.RFC3339Nano)
			}
		}
		out.Queues = append(out.Queues, q)
	}
	writeJSON(w, http.StatusOK, out)
}

// writeJSON writes v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"cannot encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
