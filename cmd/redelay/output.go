package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// none is what a table shows for a time or value that is not set.
const none = "-"

// newTable returns a writer that aligns tab-separated columns, two spaces
// apart; Flush writes the table.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
}

// writeJSON writes v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeJSONLine writes v as JSON on one line: one record of a stream.
func writeJSONLine(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// formatTime returns t for a table: RFC 3339 to the second in the local
// time zone, or "-" when t is zero.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return none
	}
	return t.Local().Format(time.RFC3339)
}

// jsonTime returns t for JSON: in UTC, where encoding/json writes it in
// RFC 3339 with nanoseconds; a zero t stays zero (and is omitted with
// omitzero).
func jsonTime(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

// formatDuration returns d for a table, as precise as its size makes
// useful: "0s", "350ms", "12.3s", "4m12s".
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second && d > -time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute && d > -time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// millis returns d in whole milliseconds, the unit of durations in JSON.
func millis(d time.Duration) int64 { return d.Milliseconds() }

// yesNo returns "yes" or "no".
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// oneLine returns s on one line, at most max runes long ("…" at the end
// when cut), with its line breaks and tabs, which would break a table,
// made spaces.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// isTerminal reports whether w is a terminal, where output may be
// redrawn in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// count returns n and the noun, in the plural unless n is 1: "3 items".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
