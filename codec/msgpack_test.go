package codec_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/redistest"
)

// lengthPastTheBytes are msgpack payloads whose array header claims
// 2^32-1 elements in a few bytes, with the value each is decoded into.
var lengthPastTheBytes = map[string]struct {
	data string
	into func() any
}{
	"any":        {"\xdd\xff\xff\xff\xff", func() any { return new(any) }},
	"map":        {"\x81\xa1k\xdd\xff\xff\xff\xff", func() any { return new(map[string]any) }},
	"slice":      {"\xdd\xff\xff\xff\xff", func() any { return new([]int) }},
	"struct":     {"\x81\xa5Items\xdd\xff\xff\xff\xff", func() any { return new(struct{ Items []int64 }) }},
	"nested any": {"\x92\x01\x91\xdd\xff\xff\xff\xff", func() any { return new(any) }},
}

// TestMsgpackLengthPastTheBytesChild is the child side of
// TestMsgpackLengthPastTheBytes: it decodes the case REDELAY_MSGPACK_CASE
// names, when set.
func TestMsgpackLengthPastTheBytesChild(t *testing.T) {
	name := os.Getenv("REDELAY_MSGPACK_CASE")
	if name == "" {
		return // not a child: nothing to do
	}
	tc := lengthPastTheBytes[name]
	if err := codec.Msgpack().Unmarshal([]byte(tc.data), tc.into()); err == nil || !strings.HasPrefix(err.Error(), "msgpack: ") {
		t.Fatalf("Unmarshal(%q) = %v, want a msgpack error", tc.data, err)
	}
}

// A msgpack array header that claims more elements than the bytes hold is
// a decode error: msgpack alone makes the slice first, 2^32-1 elements
// from 5 bytes, and the process dies with a fatal out of memory, which
// nothing can recover (docs/hardening.md, A11). Each decode runs in a
// child process, the one way to see it survive.
func TestMsgpackLengthPastTheBytes(t *testing.T) {
	for name := range lengthPastTheBytes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := redistest.Rerun(context.Background(), "TestMsgpackLengthPastTheBytesChild", "REDELAY_MSGPACK_CASE="+name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				lines := strings.SplitN(string(out), "\n", 8)
				t.Fatalf("the child did not exit cleanly: %v\n%s", err, strings.Join(lines[:min(7, len(lines))], "\n"))
			}
		})
	}
}

// Values that are whole still decode.
func TestMsgpackRoundTrip(t *testing.T) {
	type order struct {
		ID    string         `json:"id"`
		Items []int64        `json:"items"`
		Meta  map[string]any `json:"meta"`
		At    time.Time      `json:"at"`
	}
	c := codec.Msgpack()
	in := order{ID: "A-1", Items: []int64{1, 2, 3}, Meta: map[string]any{"k": "v"}, At: time.Unix(1700000000, 0).UTC()}
	data, err := c.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out order
	if err := c.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != in.ID || len(out.Items) != 3 || out.Meta["k"] != "v" || !out.At.Equal(in.At) {
		t.Fatalf("round trip = %+v, want %+v", out, in)
	}
	if err := c.Unmarshal(data[:len(data)-1], &out); err == nil {
		t.Fatal("a truncated value decoded")
	}
}

func BenchmarkMsgpackUnmarshal(b *testing.B) {
	c := codec.Msgpack()
	for _, bc := range []struct {
		name  string
		value any
		into  func() any
	}{
		{"struct", codec.BenchOrder{
			ID: "order-123456", Customer: "customer-42", Amount: 99.5,
			Items: []int64{1, 2, 3, 4, 5, 6, 7, 8}, Tags: map[string]string{"region": "eu", "tier": "gold"},
			At: time.Unix(1700000000, 0).UTC(),
		}, func() any { return new(codec.BenchOrder) }},
		{"string", "a short text message", func() any { return new(string) }},
		{"1KiB bytes", make([]byte, 1024), func() any { return new([]byte) }},
		{"100 ints", make([]int64, 100), func() any { return new([]int64) }},
	} {
		data, err := c.Marshal(bc.value)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Unmarshal(data, bc.into()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkMsgpackMarshal(b *testing.B) {
	c := codec.Msgpack()
	for _, bc := range codec.BenchValues() {
		b.Run(bc.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Marshal(bc.Value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
