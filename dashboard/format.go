package dashboard

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"math"
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
// bytes; the item's page shows all of it.
const maxListedPayload = 2000

// maxRawShown bounds the raw bytes an item's page shows, in bytes.
const maxRawShown = 4096

// payloadText is what the dashboard shows of an item's value: its
// generic decoding as indented JSON, or why it could not be decoded
// (failed is true then).
func payloadText(it inspect.Item) (text string, failed bool) {
	if it.DecodeError != "" {
		return "cannot decode: " + it.DecodeError, true
	}
	if it.Value == nil {
		if len(it.Payload) > 1 && !utf8.Valid(it.Payload) {
			return fmt.Sprintf("(%d bytes of binary data)", len(it.Payload)), false
		}
		return "null", false
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the templates escape; \u003c would only hinder reading
	enc.SetIndent("", "  ")
	if err := enc.Encode(jsonable(it.Value)); err != nil {
		return fmt.Sprintf("%v", it.Value), false
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), false
}

// jsonable returns v with what JSON cannot hold (NaN and infinite numbers)
// written as strings, copying the maps and slices that held any.
func jsonable(v any) any {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Sprint(x)
		}
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Sprint(x)
		}
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = jsonable(e)
		}
		return m
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = jsonable(e)
		}
		return s
	}
	return v
}

// truncate cuts s to at most n bytes, on a character boundary, saying so.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes: open the item)", len(s)-cut)
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
