package dashboard

import (
	"fmt"
	"net/http"
	"strings"
)

// maxConfirmIDs bounds the IDs the page that asks to confirm a bulk
// action lists: it says how many more there are.
const maxConfirmIDs = 20

// confirmPage is the data of the page that asks to confirm an action.
type confirmPage struct {
	Queue    string
	QueueURL string
	Question string
	Detail   string
	IDs      []string // the items of a bulk action, the first maxConfirmIDs
	MoreIDs  int      // how many more it acts on
	Action   string   // the URL the confirming form POSTs to
	Fields   []header // the hidden fields it carries, besides csrf and confirm=yes
	Verb     string   // its button
	Keep     string   // the link back, which changes nothing
	Back     string
	Live     string // the JSON of the queue's stats: the page turns stale with them
}

func (p confirmPage) liveURL() string { return p.Live }

// confirm answers the page that asks to confirm the action name on t
// (item id, for cancel), POSTed without confirm=yes: it changes nothing,
// says what the action will do, and its form POSTs the same with
// confirm=yes; its link goes back. A JavaScript confirm() would not ask
// with script off: this page asks in every browser. What the question
// needs read from Redis (a count, the item's state) is read: a queue or
// item that is gone sends the browser back with the error.
func (h *handler) confirm(w http.ResponseWriter, r *http.Request, name string, t target, id string) {
	p, err := h.confirmData(r, name, t, id)
	if err != nil {
		h.redirect(w, r, t, id, h.failure(r, name, &t, id, err), true)
		return
	}
	h.render(w, r, http.StatusOK, "confirm", p.Question, p)
}

// confirmData returns what the page that asks to confirm the action name
// on t (item id) says.
func (h *handler) confirmData(r *http.Request, name string, t target, id string) (confirmPage, error) {
	ctx := r.Context()
	l := linksFor(r)
	p := confirmPage{
		Queue:    t.Queue,
		QueueURL: l.Queue(t.Queue),
		Action:   l.Act(name, t, id),
		Back:     h.back(l, t, id, "", false),
		Live:     l.API(t.Queue),
	}
	switch name {
	case actPause:
		st, err := h.in.Stats(ctx, t.Queue)
		if err != nil {
			return confirmPage{}, err
		}
		p.Question = fmt.Sprintf("Pause queue %q?", t.Queue)
		p.Detail = fmt.Sprintf("No process hands out its items until it is resumed: consumers stop taking them, "+
			"producers go on offering, items in flight finish. Ready items waiting now: %d.", st.Ready)
		p.Verb, p.Keep = "Pause queue", "Keep it running"
	case actPauseGroup:
		p.Question = fmt.Sprintf("Pause group %q of queue %q?", t.Group, t.Queue)
		p.Detail = "No process hands out the items of this group until it is resumed; the other groups go on, items of the group in flight finish."
		p.Verb, p.Keep = "Pause group", "Keep it running"
	case actCancel:
		it, err := h.in.Get(ctx, t.Queue, id)
		if err != nil {
			return confirmPage{}, err
		}
		p.Question = fmt.Sprintf("Cancel item %q?", id)
		p.Detail = fmt.Sprintf("It is deleted from queue %q, where it is %s now", t.Queue, it.State)
		switch it.State {
		case "delayed":
			p.Detail += ": it never falls due"
		case "inflight":
			p.Detail += ": its handler's work is not undone, and its consumer loses the lease"
		}
		p.Detail += ". This cannot be undone."
		p.Verb, p.Keep = "Cancel item", "Keep it"
	case actRequeueAll:
		st, err := h.in.Stats(ctx, t.Queue)
		if err != nil {
			return confirmPage{}, err
		}
		p.Question = fmt.Sprintf("Requeue every dead letter of queue %q?", t.Queue)
		p.Detail = fmt.Sprintf("%s now, and any that die before you confirm, go back to the ready items, to be delivered again.",
			capitalize(plural(st.Dead, "dead letter")))
		p.Verb, p.Keep = "Requeue all", "Keep them dead"
	case actPurge:
		st, err := purgeState(r.URL.Query())
		if err != nil {
			return confirmPage{}, err
		}
		stats, err := h.in.Stats(ctx, t.Queue)
		if err != nil {
			return confirmPage{}, err
		}
		p.Question = fmt.Sprintf("Purge the %s items of queue %q?", st, t.Queue)
		p.Detail = fmt.Sprintf("This drops every %s item: %d now, and any that arrive before you confirm. It cannot be undone.",
			st, count(stats, st))
		p.Verb, p.Keep = fmt.Sprintf("Purge %s items", st), "Keep them"
	case actUnschedule:
		name, err := scheduleParam(t.Schedule)
		if err != nil {
			return confirmPage{}, err
		}
		p.Question = fmt.Sprintf("Remove schedule %q of queue %q?", name, t.Queue)
		p.Detail = "It ticks no more, and its ticks not yet delivered are dropped. Items it already delivered stay. " +
			"A process that calls Schedule with this name again brings it back."
		p.Verb, p.Keep = "Remove schedule", "Keep it"
	case actForget:
		st, err := h.in.Stats(ctx, t.Queue)
		if err != nil {
			return confirmPage{}, err
		}
		p.Question = fmt.Sprintf("Forget queue %q?", t.Queue)
		p.Detail = "Its settings, totals and history are deleted and it leaves the list of queues. " +
			"Only a queue that holds nothing (no item in any state, no schedule) can be forgotten"
		if n := st.Delayed + st.Retry + st.Ready + st.Inflight + st.Dead; n > 0 {
			p.Detail += fmt.Sprintf(": this one holds %s now, so it will be refused", plural(n, "item"))
		}
		p.Detail += ". A process that uses it again brings it back."
		p.Verb, p.Keep = "Forget queue", "Keep it"
	case actBulk:
		op := r.PostForm.Get("op")
		_, err := h.bulkOp(op)
		var ids []string
		if err == nil {
			ids, err = bulkIDs(r.PostForm)
		}
		if err != nil {
			return confirmPage{}, err
		}
		what := plural(int64(len(ids)), "item")
		p.Question = fmt.Sprintf("%s %s of queue %q?", capitalize(op), what, t.Queue)
		switch op {
		case actCancel:
			p.Detail = "Each is deleted, wherever it is. This cannot be undone."
		case actPromote:
			p.Detail = "Each delayed item or retry falls due now, ready to be taken."
		case actRequeue:
			p.Detail = "Each dead letter goes back to the ready items, to be delivered again."
		}
		p.IDs = ids[:min(len(ids), maxConfirmIDs)]
		p.MoreIDs = len(ids) - len(p.IDs)
		p.Fields = append(p.Fields, header{Name: "op", Value: op})
		for _, id := range ids {
			p.Fields = append(p.Fields, header{Name: "id", Value: id})
		}
		p.Verb, p.Keep = capitalize(op)+" "+what, "Keep them"
	}
	return p, nil
}

// capitalize returns s with its first letter upper-case (ASCII).
func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
