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
		"empty":           {nil, ErrNotEnvelope},
		"version 0":       {append([]byte{0}, good[1:]...), ErrNotEnvelope},
		"version 16":      {append([]byte{16}, good[1:]...), ErrNotEnvelope},
		"text":            {[]byte("hello, this is not an envelope at all"), ErrNotEnvelope},
		"version 3":       {append([]byte{3}, good[1:]...), ErrUnknownVersion},
		"version 15":      {append([]byte{15}, good[1:]...), ErrUnknownVersion},
		"short header":    {good[:10], ErrNotEnvelope},
		"header only":     {good[:HeaderLen], ErrNotEnvelope},
		"id too long":     {append(append([]byte{}, good[:HeaderLen]...), 0x7f, 'a'), ErrCorrupt},
		"no count":        {good[:HeaderLen+3], ErrCorrupt},
		"truncated kv":    {good[:HeaderLen+5], ErrCorrupt},
		"huge count":      {append(append([]byte{}, good[:HeaderLen+3]...), 0xff, 0xff, 0x03), ErrCorrupt},
		"varint overrun":  {append(append([]byte{}, good[:HeaderLen]...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), ErrCorrupt},
		"v2 no ext count": {append([]byte{2}, good[1:len(good)-1]...), ErrCorrupt},
	}
	for name, c := range cases {
		if _, err := Unmarshal(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
		if errors.Is(c.want, ErrNotEnvelope) != !IsEnvelope(c.b) {
			t.Errorf("%s: IsEnvelope = %v", name, IsEnvelope(c.b))
		}
	}
}

// Version 2 adds extension fields; a reader skips tags it does not know.
func TestVersion2(t *testing.T) {
	e := Envelope{ID: "x", Attempt: 2, Headers: map[string]string{"h": "v"},
		Ext: map[uint64][]byte{1: []byte("one"), 999: {}}, Payload: []byte("payload")}
	b := e.Marshal()
	if b[0] != 2 {
		t.Fatalf("version byte %d, want 2 for an envelope with extensions", b[0])
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != 2 || got.ID != "x" || string(got.Ext[1]) != "one" || len(got.Ext) != 2 || string(got.Payload) != "payload" {
		t.Fatalf("got %+v", got)
	}
	if (&Envelope{ID: "x"}).Marshal()[0] != 1 {
		t.Fatal("an envelope without extensions is not written as version 1")
	}
	// A version-1 reader refuses it as a newer version, not as corrupt.
	if _, err := UnmarshalUpTo(b, 1); !errors.Is(err, ErrUnknownVersion) {
		t.Fatalf("a version-1 reader: %v, want ErrUnknownVersion", err)
	}
}

// Every version shares the prefix with the ID and the headers: a reader can
// set a header on an envelope of a version it does not know, and keep the
// rest as it is, so that a newer reader still reads all of it.
func TestWithHeaderKeepsUnknownVersions(t *testing.T) {
	e := Envelope{ID: "x", Attempt: 4, Headers: map[string]string{"a": "b"},
		Ext: map[uint64][]byte{7: []byte("seven")}, Payload: []byte("payload")}
	v2 := e.Marshal()
	future := append([]byte{9}, v2[1:]...) // a version no reader knows
	for name, raw := range map[string][]byte{"v1": (&Envelope{ID: "x", Attempt: 4, Payload: []byte("payload")}).Marshal(), "v2": v2, "v9": future} {
		out, id, ok := WithHeader(raw, HeaderError, "boom")
		if !ok || id != "x" || out[0] != raw[0] || Attempt(out) != 4 {
			t.Fatalf("%s: WithHeader = ok %v, id %q, version %d, attempt %d", name, ok, id, out[0], Attempt(out))
		}
		if out[0] > Version {
			out[0] = 2 // read it as the v2 it was built from
		}
		got, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Headers[HeaderError] != "boom" || string(got.Payload) != "payload" {
			t.Fatalf("%s: got %+v", name, got)
		}
		if raw[0] != 1 && string(got.Ext[7]) != "seven" {
			t.Fatalf("%s: extension lost: %+v", name, got.Ext)
		}
	}
	if out, _, ok := WithHeader([]byte("not an envelope, just text"), HeaderError, "x"); ok || string(out) != "not an envelope, just text" {
		t.Fatal("WithHeader changed bytes that are no envelope")
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add((&Envelope{ID: "seed", Attempt: 1, Headers: map[string]string{"a": "b"}, Payload: []byte("x")}).Marshal())
	f.Add((&Envelope{ID: "seed", Ext: map[uint64][]byte{3: []byte("e")}, Payload: []byte("x")}).Marshal())
	f.Add([]byte{1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if out, _, ok := WithHeader(b, HeaderError, "x"); ok != IsEnvelope(b) && ok {
			t.Fatalf("WithHeader accepted bytes IsEnvelope refuses: %q", out)
		}
		e, err := Unmarshal(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnknownVersion) && !errors.Is(err, ErrNotEnvelope) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		// Whatever decodes must re-encode to something that decodes to the same.
		again, err := Unmarshal(e.Marshal())
		if err != nil {
			t.Fatalf("re-encode failed: %v", err)
		}
		if again.ID != e.ID || again.Attempt != e.Attempt || !bytes.Equal(again.Payload, e.Payload) || len(again.Headers) != len(e.Headers) || len(again.Ext) != len(e.Ext) {
			t.Fatalf("re-encode mismatch: %+v vs %+v", again, e)
		}
		if id, err := PeekID(b); err != nil || id != e.ID {
			t.Fatalf("PeekID = %q, %v; Unmarshal said %q", id, err, e.ID)
		}
	})
}

func TestWithoutDeadline(t *testing.T) {
	now := time.UnixMilli(time.Now().UnixMilli())
	base := Envelope{ID: "x", EnqueuedAt: now, DueAt: now, Attempt: 2,
		Headers: map[string]string{"k": "v"}, Payload: []byte("payload")}
	withTTL := base
	withTTL.SetTTL(time.Minute)
	both := withTTL
	both.Ext = map[uint64][]byte{ExtDeadline: withTTL.Ext[ExtDeadline], ExtPriority: {5}, 9: []byte("unknown tag")}
	for _, c := range []struct {
		what    string
		in      Envelope
		version int
		ext     int
	}{
		{"deadline only: version 1", withTTL, 1, 0},
		{"deadline, priority and an unknown tag", both, 2, 2},
	} {
		got, err := Unmarshal(WithoutDeadline(c.in.Marshal()))
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if _, ok := got.Deadline(); ok || got.Version() != c.version || len(got.Ext) != c.ext {
			t.Errorf("%s: version %d, %d extensions, deadline kept %v", c.what, got.Version(), len(got.Ext), ok)
		}
		if got.ID != "x" || !got.EnqueuedAt.Equal(now) || !got.DueAt.Equal(now) || got.Attempt != 2 ||
			got.Headers["k"] != "v" || string(got.Payload) != "payload" {
			t.Errorf("%s: the rest changed: %+v", c.what, got)
		}
		if c.ext == 2 && (got.Priority() != 5 || string(got.Ext[9]) != "unknown tag") {
			t.Errorf("%s: the other extensions changed: %v", c.what, got.Ext)
		}
	}
	// Unchanged: no deadline, no envelope, a version 1 envelope, a
	// malformed one.
	noTTL := base
	noTTL.SetPriority(3)
	malformed := withTTL.Marshal()
	malformed = malformed[:len(malformed)-len("payload")-3]
	for _, raw := range [][]byte{noTTL.Marshal(), base.Marshal(), []byte("no envelope"), {2}, nil, malformed} {
		if got := WithoutDeadline(raw); !bytes.Equal(got, raw) {
			t.Errorf("WithoutDeadline(%q) = %q, want it unchanged", raw, got)
		}
	}
}
