package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
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

// oneLine returns s for a table cell (see safeText), on one line and at
// most max runes long ("…" at the end when cut, never inside an escape):
// its runs of white space, line breaks and tabs included, are made one
// space.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if shown := safeText(s); utf8.RuneCountInString(shown) <= max {
		return shown
	}
	var b strings.Builder
	width := 0
	for i := 0; i < len(s); {
		_, size := utf8.DecodeRuneInString(s[i:])
		piece := safeText(s[i : i+size])
		if width += utf8.RuneCountInString(piece); width > max-1 {
			break
		}
		b.WriteString(piece)
		i += size
	}
	return b.String() + "…"
}

// safeText returns s as text a terminal shows and does not act on: every
// rune that is not graphic (control characters such as ESC, BEL, CR and
// newlines, the C1 controls, bidirectional overrides and other format
// characters) and every byte that is not UTF-8 written as Go writes it in
// a quoted string (\x1b, \r, \n, \u202e, \xff), and nothing else changed.
// IDs, headers, errors and names are stored as producers and handlers gave
// them; printed raw they could clear the screen, plant a link, overwrite
// what a row shows, or (the byte 0xff, text/tabwriter's escape) switch a
// table's alignment off.
func safeText(s string) string {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || !unicode.IsGraphic(r) {
			break
		}
		i += size
	}
	if i == len(s) {
		return s
	}
	b := []byte(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = fmt.Appendf(b, `\x%02x`, s[i])
		case unicode.IsGraphic(r):
			b = append(b, s[i:i+size]...)
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\r', '\u202e'
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	return string(b)
}

// safeLines is safeText for text of several lines: each line made safe,
// the newlines between them kept.
func safeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = safeText(l)
	}
	return strings.Join(lines, "\n")
}

// writeSafeLines writes s, text of several lines, to w as safeLines
// returns it, and a newline, a line at a time.
func writeSafeLines(w io.Writer, s string) error {
	for line := range strings.SplitSeq(s, "\n") {
		if _, err := io.WriteString(w, safeText(line)); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	return nil
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
