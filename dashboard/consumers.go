package dashboard

import (
	"net/http"

	"github.com/redelay/redelay/inspect"
)

// consumersPage is the data of the page of the processes consuming the
// queues.
type consumersPage struct {
	Consumers []consumerView
	Live      string // the JSON of every queue's stats: the page turns stale with them
}

func (p consumersPage) liveURL() string { return p.Live }

// consumerView is a consumer as a page shows it.
type consumerView struct {
	inspect.Consumer
	QueueURL string
}

// consumers answers the page of the processes consuming the queues, as
// each Consume records itself (inspect.Consumers: one round trip): queue,
// host, PID, concurrency, deliveries in flight at its last refresh,
// started, last seen.
func (h *handler) consumers(w http.ResponseWriter, r *http.Request) {
	all, err := h.in.Consumers(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	l := linksFor(r)
	p := consumersPage{Live: l.API("")}
	for _, c := range all {
		p.Consumers = append(p.Consumers, consumerView{Consumer: c, QueueURL: l.Queue(c.Queue)})
	}
	h.render(w, r, http.StatusOK, "consumers", "Consumers", p)
}

// consumersOf returns the consumers of the queue name, for its page.
func (h *handler) consumersOf(r *http.Request, name string) ([]consumerView, error) {
	all, err := h.in.Consumers(r.Context())
	if err != nil {
		return nil, err
	}
	var out []consumerView
	for _, c := range all {
		if c.Queue == name {
			out = append(out, consumerView{Consumer: c})
		}
	}
	return out, nil
}
