package dashboard

import (
	"net/url"
	"strings"
	"unicode/utf8"
)

// maxFlash bounds a flash message, in bytes.
const maxFlash = 300

// flashValues returns the query parameters that carry msg to the page an
// action returns to: the message and its MAC, so that only messages this
// dashboard wrote are shown (a link cannot make it say something else).
func (h *handler) flashValues(v url.Values, msg string) {
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	if len(msg) > maxFlash {
		n := maxFlash
		for n > 0 && !utf8.RuneStart(msg[n]) {
			n--
		}
		msg = msg[:n] + "…"
	}
	v.Set("flash", msg)
	v.Set("fs", h.sign.sign(purposeFlash, msg))
}

// flash returns the flash message in a page's query, "" when there is
// none or its MAC is wrong.
func (h *handler) flash(v url.Values) string {
	msg := v.Get("flash")
	if msg == "" || !h.sign.verify(purposeFlash, msg, v.Get("fs")) {
		return ""
	}
	return msg
}
