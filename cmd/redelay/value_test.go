package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// Values JSON cannot hold are shown by name, not dropped; a value whose
// text is cut is null, and says why.
func TestJSONValue(t *testing.T) {
	v := map[string]any{"nan": math.NaN(), "inf": []any{math.Inf(1), float32(math.Inf(-1))}, "n": 1.5, "b": []byte("hi")}
	raw, cut := jsonValue(inspect.Item{Value: v, Payload: []byte("stored")})
	b, err := json.Marshal(raw)
	if err != nil || cut != "" {
		t.Fatal(err, cut)
	}
	if want := `{"b":"aGk=","inf":["+Inf","-Inf"],"n":1.5,"nan":"NaN"}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
	raw, cut = jsonValue(inspect.Item{Value: redistest.Nested(101, 1), Payload: []byte("stored")})
	if raw != nil || !strings.Contains(cut, "nested deeper than 100 levels") {
		t.Fatalf("a value nested 101 levels deep: %s, %q", raw, cut)
	}
	raw, cut = jsonValue(inspect.Item{Value: strings.Repeat("x", 8000), Payload: make([]byte, 1000)})
	if len(raw) != 8002 || cut != "" {
		t.Fatalf("a string of 8,000 bytes from 1,000: %d bytes, %q", len(raw), cut)
	}
	raw, cut = jsonValue(inspect.Item{Value: strings.Repeat("x", minValueText), Payload: make([]byte, 1000)})
	if raw != nil || cut != "cut at 256 KiB" {
		t.Fatalf("a string of 256 KiB from 1,000 bytes: %d bytes, %q", len(raw), cut)
	}
}

// A payload without a value is summed up by its size and first bytes:
// as text when it is, in hex otherwise.
func TestRawSummary(t *testing.T) {
	cases := []struct {
		payload []byte
		want    string
	}{
		{nil, "(empty)"},
		{[]byte("plain text"), `(10 bytes) "plain text"`},
		{[]byte{0x82, 0xa1, 0x61, 0x01}, "(4 bytes) 82a16101"},
		{[]byte("0123456789abcdef0123456789abcdefXYZ"), `(35 bytes) "0123456789abcdef0123456789abcdef"…`},
		{[]byte("tab\there"), `(8 bytes) 7461620968657265`},
		{append([]byte("0123456789abcdef0123456789abcde"), "é"...), `(33 bytes) "0123456789abcdef0123456789abcde"…`},
	}
	for _, c := range cases {
		if got := rawSummary(inspect.Item{Payload: c.payload}); got != c.want {
			t.Errorf("rawSummary(%q) = %s, want %s", c.payload, got, c.want)
		}
	}
}

// oneLine keeps table cells on one line and cuts them at a width.
func TestOneLine(t *testing.T) {
	if got := oneLine("a\nb\t c", 10); got != "a b c" {
		t.Errorf("oneLine = %q", got)
	}
	if got := oneLine("héllo wörld", 6); got != "héllo…" {
		t.Errorf("oneLine = %q", got)
	}
	// Escaped (safeText), and cut between escapes, never inside one.
	if got := oneLine("a\x1b[2J\u202e\xff", 40); got != `a\x1b[2J\u202e\xff` {
		t.Errorf("oneLine = %q", got)
	}
	if got := oneLine("ab\x1bcd", 4); got != "ab…" {
		t.Errorf("oneLine = %q", got)
	}
}
