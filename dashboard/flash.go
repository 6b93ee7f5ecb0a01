package dashboard

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxFlash bounds a flash message, in bytes.
const maxFlash = 300

// flashValues sets the query parameters that carry msg to the page an
// action returns to: the message, whether it says why the action failed
// (fk=error), and their MAC, so that only messages this dashboard wrote
// are shown (a link cannot make it say something else, nor turn a
// success into a failure).
func (h *handler) flashValues(v url.Values, msg string, failed bool) {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if len(msg) > maxFlash {
		n := maxFlash
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		msg = msg[:n] + "…"
	}
	kind := ""
	if failed {
		kind = flashError
		v.Set("fk", kind)
	}
	v.Set("flash", msg)
	v.Set("fs", h.sign.sign(purposeFlash, kind+"\n"+msg))
}

// flashError is the kind of a flash message that says why an action
// failed.
const flashError = "error"

// flash returns the flash message in a page's query and whether it says
// why an action failed; "" when there is none or its MAC is wrong.
func (h *handler) flash(v url.Values) (msg string, failed bool) {
	msg, kind := v.Get("flash"), v.Get("fk")
	if msg == "" || (kind != "" && kind != flashError) || !h.sign.verify(purposeFlash, kind+"\n"+msg, v.Get("fs")) {
		return "", false
	}
	return msg, kind == flashError
}
