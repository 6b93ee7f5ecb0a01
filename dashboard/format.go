package dashboard

import (
	"encoding/hex"
	"fmt"
	"html/template"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/redelay/redelay/inspect"
)

// templateFuncs are the functions the templates call. Each returns text
// that the templates escape.
func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"when":     formatTime,
		"rel":      formatRel,
		"duration": formatDuration,
		"title":    capitalize,
		"bytes":    bytesText,
		"now":      time.Now,
		"searchWindow": func() int {
			return searchWindow
		},
	}
}

// formatTime writes t in UTC to the millisecond; "—" for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// formatRel writes t relative to now: "in 5m0s", "3.2s ago"; "" for the
// zero time.
func formatRel(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	if d < 0 {
		return formatDuration(-d) + " ago"
	}
	return "in " + formatDuration(d)
}

// formatDuration writes d rounded to what a person reads: milliseconds
// below a second, tenths of a second below a minute, seconds above.
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// maxListedPayload bounds the text of a payload in a list of items, in
// bytes.
const maxListedPayload = 2000

// maxLinePayload bounds the one-line text of a payload in a list's row,
// in bytes: the row shows what fits its width, and opens on the indented
// text.
const maxLinePayload = 300

// maxItemPayload bounds the text of a payload on an item's page, in
// bytes: the page of a value whose text is longer says so, and shows its
// stored bytes.
const maxItemPayload = 256 << 10

// maxRawShown bounds the raw bytes an item's page shows, in bytes.
const maxRawShown = 4096

// payloadText is what the dashboard shows of an item's value: its
// generic decoding as JSON indented with indent (on one line when "") of
// at most max bytes (see inspect.FormatJSON) and what that leaves out
// (cut, "" when nothing), or why it could not be decoded (failed is true
// then).
func payloadText(it inspect.Item, max int, indent string) (text, cut string, failed bool) {
	if it.DecodeError != "" {
		return "cannot decode: " + it.DecodeError, "", true
	}
	if it.Value == nil {
		if len(it.Payload) > 1 && !utf8.Valid(it.Payload) {
			return fmt.Sprintf("(%d bytes of binary data)", len(it.Payload)), "", false
		}
		return "null", "", false
	}
	t := inspect.FormatJSON(it.Value, indent, max) // the templates escape it
	return t.Text, t.Note(), false
}

// header is one of an item's headers.
type header struct {
	Name, Value string
}

// sortedHeaders returns h by name.
func sortedHeaders(h map[string]string) []header {
	out := make([]header, 0, len(h))
	for k, v := range h {
		out = append(out, header{Name: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// rawDump is a hex dump of the first maxRawShown bytes of p.
func rawDump(p []byte) string {
	if len(p) <= maxRawShown {
		return hex.Dump(p)
	}
	return hex.Dump(p[:maxRawShown]) + fmt.Sprintf("… (%d more bytes)\n", len(p)-maxRawShown)
}
