package main

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/redelay/redelay/inspect"
)

// rawPreview is how many bytes of a payload that cannot be shown decoded
// are shown, in hex or as text.
const rawPreview = 32

// minValueText is the least of a value's text that get and -o json
// show; see valueBudget.
const minValueText = 256 << 10

// valueBudget bounds the text of the item's value in get and -o json, in
// bytes: 8 times its payload's size, at least minValueText. A value of
// ordinary data fits (its indented JSON is a few times its msgpack); a
// small payload nested or indented into a huge text is cut there.
func valueBudget(it inspect.Item) int {
	return max(minValueText, 8*len(it.Payload))
}

// compactValue returns the item's value as compact JSON for a table row,
// cut at a few times the width of the row's cell; when it has none, a
// summary of its raw bytes.
func compactValue(it inspect.Item) string {
	if it.Value == nil {
		return rawSummary(it)
	}
	return inspect.FormatJSON(it.Value, "", 4*payloadWidth).Text
}

// prettyValue returns the item's value as indented JSON (see
// valueBudget) and what it leaves out of the value ("" when nothing), or
// false when the item has no value to show (see rawSummary).
func prettyValue(it inspect.Item) (text, cut string, ok bool) {
	if it.Value == nil {
		return "", "", false
	}
	t := inspect.FormatJSON(it.Value, "  ", valueBudget(it))
	return t.Text, t.Note(), true
}

// jsonValue returns the item's value for the value field of -o json: its
// JSON, or nil (null) when it has none or when its text is cut (see
// valueBudget), and then cut says what was left out.
func jsonValue(it inspect.Item) (v json.RawMessage, cut string) {
	if it.Value == nil {
		return nil, ""
	}
	t := inspect.FormatJSON(it.Value, "  ", valueBudget(it))
	if t.Cut() {
		return nil, t.Note()
	}
	return json.RawMessage(t.Text), ""
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
