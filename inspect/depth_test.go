package inspect

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/redelay/redelay/internal/redistest"
)

// msgpackSeeds are values of every msgpack format: each width of number,
// string, binary and extension, arrays and maps of each header size.
func msgpackSeeds(t testing.TB) [][]byte {
	t.Helper()
	values := []any{
		nil, true, false, 0, 1, -1, -33, 127, 128, 255, 256, 65535, 65536, int64(1) << 40, -(int64(1) << 40),
		uint64(1) << 63, float32(1.5), 2.5, "", "x", strings.Repeat("s", 31), strings.Repeat("s", 32),
		strings.Repeat("s", 256), strings.Repeat("s", 65536), []byte{}, []byte("bin"), make([]byte, 256),
		make([]byte, 65536), time.Unix(1, 0), time.Unix(1<<33, 0), time.Unix(1, 5), time.Unix(-1, 5),
		[]any{}, make([]any, 15), make([]any, 16), make([]any, 65536), map[string]any{},
		map[string]any{"a": []any{1, map[string]any{"b": "c"}}}, redistest.Nested(maxValueDepth, 1),
	}
	big := map[int]int{}
	for i := range 65536 {
		big[i] = i
	}
	values = append(values, big)
	var seeds [][]byte
	for _, v := range values {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	return append(seeds,
		[]byte{}, []byte{0xc1}, []byte{0xdd, 0xff, 0xff, 0xff, 0xff}, []byte{0xdb, 0xff, 0xff, 0xff, 0xff},
		[]byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}, []byte{0xd8, 0x01}, []byte{0x92, 0x01}, []byte{0x81, 0x01},
		[]byte{0x91, 0x01, 0x02}, // a value and a byte after it
	)
}

// walkMsgpack reads the format as msgpack's own Skip does: the same end
// of the value, the same verdict, on any bytes.
func FuzzWalkMsgpack(f *testing.F) {
	for _, s := range msgpackSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		end, err := walkMsgpack(p)
		if errors.Is(err, errTooDeep) {
			return // Skip has no bound
		}
		r := bytes.NewReader(p)
		skipErr := msgpack.NewDecoder(r).Skip()
		if (err == nil) != (skipErr == nil) {
			t.Fatalf("walkMsgpack(%x) = %d, %v; Skip: %v", p, end, err, skipErr)
		}
		if err == nil && end != len(p)-r.Len() {
			t.Fatalf("walkMsgpack(%x) ends at %d, Skip at %d", p, end, len(p)-r.Len())
		}
	})
}

// A payload nested deeper than maxValueDepth is not decoded, whatever its
// codec; one at that depth is.
func TestDecodeDepth(t *testing.T) {
	deep := func(depth int) []byte { return append(bytes.Repeat([]byte{0x91}, depth), 0x01) }
	if v, why := decodeMsgpack(deep(maxValueDepth)); v == nil || why != "" {
		t.Errorf("%d levels: %q", maxValueDepth, why)
	}
	for _, depth := range []int{maxValueDepth + 1, 1 << 20} {
		if v, why := decodeMsgpack(deep(depth)); v != nil || why != "msgpack: nested more than 1000 levels deep" {
			t.Errorf("%d levels: %v, %q", depth, v, why)
		}
	}
	deepJSON := func(depth int) []byte {
		return []byte(strings.Repeat(`{"a":[`, depth/2) + `"]}[{"` + strings.Repeat("]}", depth/2))
	}
	if v, why := decodeJSON(deepJSON(maxValueDepth)); v == nil || why != "" {
		t.Errorf("JSON of %d levels: %q", maxValueDepth, why)
	}
	if v, why := decodeJSON(deepJSON(maxValueDepth + 2)); v != nil || why != "json: nested more than 1000 levels deep" {
		t.Errorf("JSON of %d levels: %v, %q", maxValueDepth+2, v, why)
	}
}
