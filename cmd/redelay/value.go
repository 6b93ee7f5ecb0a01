package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/redelay/redelay/inspect"
)

// rawPreview is how many bytes of a payload that cannot be shown decoded
// are shown, in hex or as text.
const rawPreview = 32

// jsonValue returns v, a value decoded by the inspector, in a form
// encoding/json accepts: floats that JSON cannot hold (NaN, ±Inf) become
// the strings "NaN", "+Inf" and "-Inf". []byte stays []byte (base64 in
// JSON), times stay times (RFC 3339).
func jsonValue(v any) any {
	switch x := v.(type) {
	case float64:
		return jsonFloat(x)
	case float32:
		return jsonFloat(float64(x))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	default:
		return v
	}
}

// jsonFloat returns f, or its name when JSON cannot hold it.
func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return f
}

// compactValue returns the item's value as compact JSON for a table row;
// when it has none, a summary of its raw bytes.
func compactValue(it inspect.Item) string {
	if it.Value == nil {
		return rawSummary(it)
	}
	b, err := json.Marshal(jsonValue(it.Value))
	if err != nil {
		return fmt.Sprint(it.Value)
	}
	return string(b)
}

// prettyValue returns the item's value as indented JSON, and false when
// it has no value to show (see rawSummary).
func prettyValue(it inspect.Item) (string, bool) {
	if it.Value == nil {
		return "", false
	}
	b, err := json.MarshalIndent(jsonValue(it.Value), "", "  ")
	if err != nil {
		return fmt.Sprint(it.Value), true
	}
	return string(b), true
}

// rawSummary describes a payload that has no decoded value: its size and
// its first bytes, quoted when they are text, in hex otherwise.
func rawSummary(it inspect.Item) string {
	p := it.Payload
	if len(p) == 0 {
		return "(empty)"
	}
	head, more := p, ""
	if len(head) > rawPreview {
		head, more = head[:rawPreview], "…"
	}
	if printable(head) {
		for !utf8.Valid(head) { // a rune cut at the end
			head = head[:len(head)-1]
		}
		return fmt.Sprintf("(%d bytes) %q%s", len(p), head, more)
	}
	return fmt.Sprintf("(%d bytes) %s%s", len(p), hex.EncodeToString(head), more)
}

// printable reports whether b is UTF-8 text without control characters
// (a cut rune at its end allowed).
func printable(b []byte) bool {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			return len(b) < utf8.UTFMax && !utf8.FullRune(b)
		}
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
		b = b[size:]
	}
	return true
}
