package codec

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

type selfRef struct{ Next *selfRef }

type privateLoop struct {
	Name string
	next *privateLoop
}

type skippedLoop struct {
	Name string
	Next *skippedLoop `msgpack:"-"`
}

type ownEncoding struct{ Self *ownEncoding }

func (ownEncoding) MarshalMsgpack() ([]byte, error) { return []byte{0xc0}, nil }

type embedsLoop struct{ *selfRef }

type (
	nodeMap      map[string]*selfRef
	nodeSlice    []*selfRef
	hiddenFields struct {
		nodeMap
		nodeSlice
	}
)

// Through unexported embedded fields, which msgpack encodes and reflect
// lets read but not copy from, the walk finds a cycle without panicking.
func TestCycleThroughUnexportedEmbedded(t *testing.T) {
	loop := &selfRef{}
	loop.Next = loop
	c := Msgpack()
	for name, v := range map[string]hiddenFields{
		"map":   {nodeMap: nodeMap{"a": loop}},
		"slice": {nodeSlice: nodeSlice{loop}},
	} {
		if _, err := c.Marshal(v); !errors.Is(err, ErrUnsupportedValue) {
			t.Errorf("%s: Marshal = %v, want ErrUnsupportedValue", name, err)
		}
	}
	fine := hiddenFields{nodeMap: nodeMap{"a": {}}, nodeSlice: nodeSlice{{}}}
	if _, err := c.Marshal(fine); err != nil {
		t.Fatalf("Marshal without a cycle = %v", err)
	}
}

// Which types are walked is decided per type: only those through which a
// value can lead back to itself in what msgpack encodes.
func TestMayCycle(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want bool
	}{
		{"", false},
		{time.Time{}, false},
		{[]int64(nil), false},
		{struct {
			ID   string
			Tags map[string]string
			At   time.Time
			Ptr  *int
		}{}, false},
		{privateLoop{}, false},
		{skippedLoop{}, false},
		{ownEncoding{}, false},
		{&ownEncoding{}, false},
		{[]error(nil), false},
		{selfRef{}, true},
		{&selfRef{}, true},
		{embedsLoop{}, true},
		{map[string]any(nil), true},
		{[]any(nil), true},
		{struct{ V []any }{}, true},
		{[2]map[int]*selfRef{}, true},
	} {
		var c cycles
		if got := c.typeOf(reflect.TypeOf(tc.v)).may; got != tc.want {
			t.Errorf("%T: may cycle = %v, want %v", tc.v, got, tc.want)
		}
	}
}

// A value whose type cannot hold a cycle is not walked: the check costs no
// allocation, and neither does a shallow walk.
func TestCycleCheckAllocs(t *testing.T) {
	var c cycles
	plain := struct {
		ID    string
		Items []int64
		Tags  map[string]string
	}{"a", []int64{1, 2}, map[string]string{"k": "v"}}
	free := map[string]any{"a": 1, "b": []any{"x", map[string]any{"y": 2.5}}}
	event := struct{ Attrs map[string]any }{free}
	for name, v := range map[string]any{"plain struct": plain, "map of any": free, "struct with a map of any": event} {
		if n := testing.AllocsPerRun(100, func() { _ = c.check(v) }); n != 0 {
			t.Errorf("%s: %v allocations per check, want 0", name, n)
		}
	}
}

// BenchOrder is a typical message: a few fields, a short list, a map.
// The external test package's Unmarshal benchmark uses it too.
type BenchOrder struct {
	ID       string            `json:"id"`
	Customer string            `json:"customer"`
	Amount   float64           `json:"amount"`
	Items    []int64           `json:"items"`
	Tags     map[string]string `json:"tags"`
	At       time.Time         `json:"at"`
}

// BenchValues are the values of BenchmarkCycleCheck and, through the
// external test package, BenchmarkMsgpackMarshal.
func BenchValues() []struct {
	Name  string
	Value any
} {
	type event struct {
		ID    string         `json:"id"`
		Kind  string         `json:"kind"`
		Attrs map[string]any `json:"attrs"`
	}
	return []struct {
		Name  string
		Value any
	}{
		{"struct", BenchOrder{
			ID: "order-123456", Customer: "customer-42", Amount: 99.5,
			Items: []int64{1, 2, 3, 4, 5, 6, 7, 8}, Tags: map[string]string{"region": "eu", "tier": "gold"},
			At: time.Unix(1700000000, 0).UTC(),
		}},
		{"string", "a short text message"},
		{"1KiB bytes", make([]byte, 1024)},
		{"100 ints", make([]int64, 100)},
		{"map of any", map[string]any{
			"user": "u-42", "count": 3, "ok": true, "ratio": 0.5,
			"tags": []any{"a", "b"}, "nested": map[string]any{"k": "v"},
		}},
		{"struct with any", event{ID: "evt-1", Kind: "click", Attrs: map[string]any{
			"x": 10, "y": 20, "target": "button", "path": []any{"body", "div", "button"},
		}}},
	}
}

// BenchmarkCycleCheck is what the check adds to a Marshal of each value.
func BenchmarkCycleCheck(b *testing.B) {
	var c cycles
	for _, bc := range BenchValues() {
		b.Run(bc.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.check(bc.Value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
