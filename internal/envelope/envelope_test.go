package envelope

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	now := time.UnixMilli(time.Now().UnixMilli())
	cases := []Envelope{
		{ID: "a"},
		{ID: "order-42", EnqueuedAt: now, DueAt: now.Add(time.Minute), Attempt: 3,
			Headers: map[string]string{"traceparent": "00-abc-def-01", "": "empty key"},
			Payload: []byte{0x81, 0xa1, 'x', 0x01}},
		{ID: string(make([]byte, 300)), Payload: bytes.Repeat([]byte("p"), 1<<16)},
	}
	for _, want := range cases {
		got, err := Unmarshal(want.Marshal())
		if err != nil {
			t.Fatalf("Unmarshal(%q): %v", want.ID, err)
		}
		if got.ID != want.ID || !got.EnqueuedAt.Equal(want.EnqueuedAt) || !got.DueAt.Equal(want.DueAt) ||
			got.Attempt != want.Attempt || !bytes.Equal(got.Payload, want.Payload) || len(got.Headers) != len(want.Headers) {
			t.Fatalf("round trip: got %+v, want %+v", got, want)
		}
		for k, v := range want.Headers {
			if got.Headers[k] != v {
				t.Fatalf("header %q: got %q, want %q", k, got.Headers[k], v)
			}
		}
		id, err := PeekID(want.Marshal())
		if err != nil || id != want.ID {
			t.Fatalf("PeekID = %q, %v; want %q", id, err, want.ID)
		}
	}
}

func TestHeaderOffsets(t *testing.T) {
	// The Lua scripts patch these bytes in place; pin the layout.
	b := (&Envelope{ID: "x", EnqueuedAt: time.UnixMilli(0x0102030405), DueAt: time.UnixMilli(0x0a0b0c0d0e), Attempt: 7}).Marshal()
	want := []byte{1, 0, 0, 0, 1, 2, 3, 4, 5, 0, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0, 0, 0, 7, 1, 'x', 0}
	if !bytes.Equal(b, want) {
		t.Fatalf("layout:\n got %v\nwant %v", b, want)
	}
}

func TestErrors(t *testing.T) {
	good := (&Envelope{ID: "id", Headers: map[string]string{"k": "v"}, Payload: []byte("p")}).Marshal()
	cases := map[string]struct {
		b    []byte
		want error
	}{
		"empty":          {nil, ErrCorrupt},
		"version 0":      {[]byte{0}, ErrUnknownVersion},
		"version 2":      {append([]byte{2}, good[1:]...), ErrUnknownVersion},
		"short header":   {good[:10], ErrCorrupt},
		"no id":          {good[:HeaderLen], ErrCorrupt},
		"id too long":    {append(append([]byte{}, good[:HeaderLen]...), 0x7f, 'a'), ErrCorrupt},
		"no count":       {good[:HeaderLen+3], ErrCorrupt},
		"truncated kv":   {good[:HeaderLen+5], ErrCorrupt},
		"huge count":     {append(append([]byte{}, good[:HeaderLen+3]...), 0xff, 0xff, 0x03), ErrCorrupt},
		"varint overrun": {append(append([]byte{}, good[:HeaderLen]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrCorrupt},
	}
	for name, c := range cases {
		if _, err := Unmarshal(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
		if _, err := PeekID(c.b); err == nil && c.want == ErrUnknownVersion {
			t.Errorf("%s: PeekID accepted a bad version", name)
		}
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add((&Envelope{ID: "seed", Attempt: 1, Headers: map[string]string{"a": "b"}, Payload: []byte("x")}).Marshal())
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Unmarshal(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// Whatever decodes must re-encode to something that decodes to the same.
		again, err := Unmarshal(e.Marshal())
		if err != nil {
			t.Fatalf("re-encode failed: %v", err)
		}
		if again.ID != e.ID || again.Attempt != e.Attempt || !bytes.Equal(again.Payload, e.Payload) || len(again.Headers) != len(e.Headers) {
			t.Fatalf("re-encode mismatch: %+v vs %+v", again, e)
		}
		if id, err := PeekID(b); err != nil || id != e.ID {
			t.Fatalf("PeekID = %q, %v; Unmarshal said %q", id, err, e.ID)
		}
	})
}
