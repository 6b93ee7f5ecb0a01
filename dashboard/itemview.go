package dashboard

import (
	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/envelope"
)

// itemView is an item as a page shows it, with the URLs of its actions.
type itemView struct {
	inspect.Item
	Queue         string
	URL           string // the item's page; "" for bytes that have no ID
	LastError     string // the header redelay-error
	PayloadText   string // the value as JSON, or why it could not be decoded
	PayloadCut    string // what PayloadText leaves out of the value; "" when nothing
	PayloadFailed bool
	// PayloadLine is the value on one line (compact JSON) for a list's
	// row, cut at maxLinePayload bytes; "" on an item's page.
	PayloadLine string
	CSRF        string
	Compact     bool      // shown in a list's row: the actions take less room
	Acts        *itemActs // nil when read-only or the item has no ID
}

// itemActs are the URLs the forms of an item's actions POST to; "" for an
// action that does not apply to its state.
type itemActs struct {
	Cancel     string
	Promote    string
	Reschedule string
	Requeue    string
}

// newItemView returns the view of it, an item of queue. back is the page
// its actions return to; full shows more of the payload (an item's page)
// than fits a list.
func (h *handler) newItemView(l links, queue string, it inspect.Item, back target, csrf string, full bool) itemView {
	v := itemView{Item: it, Queue: queue, LastError: it.Headers[blocking.HeaderError], CSRF: csrf}
	max := maxListedPayload
	if full {
		max = maxItemPayload
	}
	v.PayloadText, v.PayloadCut, v.PayloadFailed = payloadText(it, max, "  ")
	if !full {
		v.PayloadLine, _, _ = payloadText(it, maxLinePayload, "")
		v.Compact = true
	}
	if it.ID == "" {
		return v
	}
	v.URL = l.Item(queue, it.ID)
	if h.cfg.readOnly {
		return v
	}
	a := &itemActs{Cancel: l.Act(actCancel, back, it.ID)}
	switch it.State {
	case inspect.Delayed, inspect.Retry:
		a.Promote = l.Act(actPromote, back, it.ID)
		a.Reschedule = l.Act(actReschedule, back, it.ID)
	case inspect.Dead:
		a.Requeue = l.Act(actRequeue, back, it.ID)
	}
	v.Acts = a
	return v
}

// shownElsewhere are the headers redelay keeps for the fields an item's
// page shows in words: its errors as a list, when it was dead-lettered
// as a time, its deliveries in its attempt. The header table leaves them
// out; it keeps redelay-error, the last error whole.
var shownElsewhere = map[string]bool{
	envelope.HeaderErrors:   true,
	envelope.HeaderDeadAt:   true,
	envelope.HeaderAttempts: true,
}

// SortedHeaders returns the item's headers by name, but those its fields
// show in words.
func (v itemView) SortedHeaders() []header {
	var out []header
	for _, h := range sortedHeaders(v.Headers) {
		if !shownElsewhere[h.Name] {
			out = append(out, h)
		}
	}
	return out
}

// EarlierErrors is how many errors the item has before its last one.
func (v itemView) EarlierErrors() int { return max(0, len(v.Errors)-1) }

// Raw is a hex dump of the item's stored bytes.
func (v itemView) Raw() string { return rawDump(v.Payload) }
