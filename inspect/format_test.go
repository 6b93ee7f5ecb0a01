package inspect_test

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// Within its bounds, FormatJSON writes what encoding/json writes (without
// escaping for HTML), indented or compact.
func TestFormatJSONAsEncodingJSON(t *testing.T) {
	v := map[string]any{
		"n": int64(-3), "u": uint64(math.MaxUint64), "f": 1.5, "small": 1e-7, "f32": float32(0.1), "s": "<a & b>\u2028\xff",
		"b": true, "nil": nil, "bytes": []byte("hi"), "when": time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC),
		"list": []any{int64(1), "two", map[string]any{}, []any{}, []any{map[string]any{"k": nil}}},
		"deep": redistest.Nested(99, "bottom"), "": "empty key",
	}
	for _, indent := range []string{"  ", "\t", ""} {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", indent)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		got := inspect.FormatJSON(v, indent, 0)
		if got.Text != strings.TrimSuffix(want.String(), "\n") || got.Cut() || got.Note() != "" {
			t.Errorf("indent %q:\n%s\nwant\n%s", indent, got.Text, want.String())
		}
	}
}

// NaN and infinities, which JSON cannot hold, are written by name.
func TestFormatJSONNamesNaN(t *testing.T) {
	v := []any{math.NaN(), math.Inf(1), float32(math.Inf(-1)), 2.0}
	if got := inspect.FormatJSON(v, "", 0).Text; got != `["NaN","+Inf","-Inf",2]` {
		t.Errorf("got %s", got)
	}
}

// Arrays and objects past 100 levels are written as […] and {…}; the text
// is still JSON apart from them, and says so.
func TestFormatJSONDepth(t *testing.T) {
	got := inspect.FormatJSON(redistest.Nested(100, map[string]any{"a": 1}), "  ", 0)
	if !got.Deep || !strings.Contains(got.Text, "{…}") || got.Long {
		t.Errorf("101 levels: %+v", got)
	}
	if want := "arrays and objects nested deeper than 100 levels shown as […] and {…}"; got.Note() != want {
		t.Errorf("note %q, want %q", got.Note(), want)
	}
	if !json.Valid([]byte(strings.ReplaceAll(got.Text, "{…}", "{}"))) {
		t.Errorf("not JSON around the cut:\n%s", got.Text)
	}
	for _, v := range []any{redistest.Nested(100, 1), redistest.Nested(99, map[string]any{"a": 1}), redistest.Nested(100, []any{}), redistest.Nested(100, map[string]any{})} {
		if got := inspect.FormatJSON(v, "  ", 0); got.Cut() {
			t.Errorf("100 levels: %+v", got)
		}
	}
	if got := inspect.FormatJSON(redistest.Nested(6000, 1), "", 0); got.Text != strings.Repeat("[", 100)+"[…]"+strings.Repeat("]", 100) {
		t.Errorf("6000 levels, compact: %s", got.Text)
	}
}

// The text stops at its bound, on a character boundary, and says where;
// no more than a few times the bound is built for a value whose whole
// text is hundreds of megabytes.
func TestFormatJSONBound(t *testing.T) {
	wide := redistest.Nested(99, make([]any, 1_000_000)) // 200 MB indented
	long := strings.Repeat("é", 1<<20)
	for _, c := range []struct {
		name string
		v    any
		max  int
		note string
	}{
		{"wide", wide, 2000, "cut at 2000 bytes"},
		{"deep and wide", []any{redistest.Nested(200, 1), make([]any, 1_000_000)}, 256 << 10, "cut at 256 KiB; arrays and objects nested deeper than 100 levels shown as […] and {…}"},
		{"long string", map[string]any{"k": long}, 1001, "cut at 1001 bytes"},
		{"long key", map[string]any{long: 1}, 1 << 20, "cut at 1 MiB"},
		{"bytes", []byte(long), 100, "cut at 100 bytes"},
	} {
		var got inspect.JSONText
		n := redistest.Allocated(func() { got = inspect.FormatJSON(c.v, "  ", c.max) })
		if !got.Long || got.Note() != c.note {
			t.Errorf("%s: Long %v, note %q, want %q", c.name, got.Long, got.Note(), c.note)
		}
		body, ok := strings.CutSuffix(got.Text, "…")
		if !ok || len(body) > c.max || len(body) < c.max-3 || !utf8.ValidString(body) {
			t.Errorf("%s: %d bytes before the …, want %d (less a cut character)", c.name, len(body), c.max)
		}
		if limit := uint64(16*c.max + 64<<10); n > limit {
			t.Errorf("%s: %d bytes allocated, want at most %d", c.name, n, limit)
		}
	}
	if got := inspect.FormatJSON([]any{"abc"}, "", 9); got.Cut() || got.Text != `["abc"]` {
		t.Errorf("a text shorter than its bound: %+v", got)
	}
	if got := inspect.FormatJSON([]any{"abc"}, "", 7); got.Cut() || got.Text != `["abc"]` {
		t.Errorf("a text as long as its bound: %+v", got)
	}
	if got := inspect.FormatJSON([]any{"abc"}, "", 6); !got.Long || got.Text != `["abc"…` {
		t.Errorf("a text a byte longer than its bound: %+v", got)
	}
}
