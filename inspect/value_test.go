package inspect

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/redelay/redelay/codec"
)

func TestDecodeMsgpack(t *testing.T) {
	type inner struct{ F float64 }
	in := map[string]any{
		"small": 5, "neg": -200, "big": uint64(math.MaxUint64), "i64": int64(math.MinInt64),
		"f": 1.5, "s": "x", "b": true, "nil": nil, "bytes": []byte{1, 2},
		"list":  []any{1, "two", map[string]any{"k": uint16(300)}},
		"ints":  map[int]string{1: "one"},
		"inner": inner{F: 2.5}, "f32": float32(0.5), "when": time.Unix(1700000000, 5),
	}
	data, err := codec.Msgpack().Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, why := decodeMsgpack(data)
	want := map[string]any{
		"small": int64(5), "neg": int64(-200), "big": uint64(math.MaxUint64), "i64": int64(math.MinInt64),
		"f": 1.5, "s": "x", "b": true, "nil": nil, "bytes": []byte{1, 2},
		"list":  []any{int64(1), "two", map[string]any{"k": int64(300)}},
		"ints":  map[string]any{"1": "one"},
		"inner": map[string]any{"F": 2.5}, "f32": float32(0.5), "when": time.Unix(1700000000, 5),
	}
	if why != "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeMsgpack = %#v, %q\nwant %#v", got, why, want)
	}
	for _, bad := range [][]byte{nil, {0xc1}, {0x82, 0xa1, 'a'}, {0xdf, 0xff, 0xff, 0xff, 0xff}} {
		if v, why := decodeMsgpack(bad); v != nil || !strings.HasPrefix(why, "msgpack: ") {
			t.Errorf("decodeMsgpack(%x) = %#v, %q", bad, v, why)
		}
	}
	scalar, _ := msgpack.Marshal(uint8(200))
	if v, why := decodeMsgpack(scalar); v != int64(200) || why != "" {
		t.Errorf("decodeMsgpack(uint8) = %#v, %q", v, why)
	}
}

func TestDecodeJSON(t *testing.T) {
	got, why := decodeJSON([]byte(`{"n": 3, "l": [1, "a"], "o": {"x": null}}`))
	want := map[string]any{"n": 3.0, "l": []any{1.0, "a"}, "o": map[string]any{"x": nil}}
	if why != "" || !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeJSON = %#v, %q", got, why)
	}
	if v, why := decodeJSON([]byte(`{"n": 3} x`)); v != nil || !strings.HasPrefix(why, "json: ") {
		t.Errorf("decodeJSON(trailing) = %#v, %q", v, why)
	}
}

// The names the inspector knows are those of the codec package.
func TestDecoderNames(t *testing.T) {
	for _, c := range []codec.Codec{codec.Msgpack(), codec.JSON(), codec.Raw()} {
		data, err := c.Marshal("text")
		if err != nil {
			t.Fatal(err)
		}
		if v, why := decoderFor(c.Name())(data); v != "text" || why != "" {
			t.Errorf("%s: %#v, %q", c.Name(), v, why)
		}
	}
	if v, why := decoderFor("gob")([]byte("x")); v != nil || !strings.Contains(why, `"gob"`) {
		t.Errorf("gob: %#v, %q", v, why)
	}
}
