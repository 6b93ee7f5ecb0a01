package codec_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/redistest"
)

// node, tree, box and hidden are types whose values can lead back to
// themselves.
type node struct{ Next *node }

type tree struct {
	Name string
	Kids map[string]*tree
}

type box struct{ V any }

type hidden struct {
	Name string
	self *hidden // unexported: not encoded
	Skip *hidden `json:"-"`
}

// cyclicValues each lead back to themselves in what msgpack encodes.
var cyclicValues = map[string]func() any{
	"pointer": func() any { n := &node{}; n.Next = n; return n },
	"struct":  func() any { n := &node{}; n.Next = n; return *n },
	"map": func() any {
		m := map[string]any{"k": "v"}
		m["self"] = m
		return m
	},
	"slice": func() any {
		s := []any{1, nil}
		s[1] = s
		return s
	},
	"map of pointers": func() any {
		t := &tree{Name: "root"}
		t.Kids = map[string]*tree{"a": {Name: "a", Kids: map[string]*tree{"back": t}}}
		return t
	},
	"interface field": func() any { b := &box{}; b.V = b; return b },
	"long cycle": func() any { // the loop closes 5,000 nodes down
		first := &node{}
		n := first
		for range 5000 {
			n.Next = &node{}
			n = n.Next
		}
		n.Next = first
		return first
	},
	"slice in map in slice": func() any {
		s := []any{map[string]any{}}
		s[0].(map[string]any)["s"] = []any{s}
		return s
	},
}

// TestMsgpackCycleChild is the child side of TestMsgpackCycle: it encodes
// the value REDELAY_MSGPACK_CYCLE names, when set.
func TestMsgpackCycleChild(t *testing.T) {
	name := os.Getenv("REDELAY_MSGPACK_CYCLE")
	if name == "" {
		return // not a child: nothing to do
	}
	v := cyclicValues[name]()
	b, err := codec.Msgpack().Marshal(v)
	if !errors.Is(err, codec.ErrUnsupportedValue) || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("Marshal = %d bytes, %v; want an error wrapping ErrUnsupportedValue that names the cycle", len(b), err)
	}
	t.Log(err)
}

// A cyclic value is an error wrapping ErrUnsupportedValue: msgpack alone
// follows the cycle until the goroutine's stack overflows, a fatal error
// that kills the process (docs/hardening.md, A18). Each value is encoded
// in a child process, the one way to see it survive.
func TestMsgpackCycle(t *testing.T) {
	for name := range cyclicValues {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := redistest.Rerun(context.Background(), "TestMsgpackCycleChild", "REDELAY_MSGPACK_CYCLE="+name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				lines := strings.SplitN(string(out), "\n", 8)
				t.Fatalf("the child did not exit cleanly: %v\n%s", err, strings.Join(lines[:min(7, len(lines))], "\n"))
			}
		})
	}
}

// Values that are deep, share parts, or close a loop only through what
// msgpack does not encode still encode.
func TestMsgpackNoCycle(t *testing.T) {
	c := codec.Msgpack()
	deep := &node{}
	n := deep
	for range 5000 {
		n.Next = &node{}
		n = n.Next
	}
	shared := map[string]any{"k": "v"}
	sharedSlice := []any{1, 2}
	h := &hidden{Name: "h"}
	h.self = h
	h.Skip = h
	for name, v := range map[string]any{
		"deep list":    deep,
		"shared map":   []any{shared, shared, map[string]any{"again": shared}},
		"shared slice": map[string]any{"a": sharedSlice, "b": sharedSlice},
		"shared node":  &tree{Kids: map[string]*tree{"a": {Name: "x"}, "b": nil}},
		"hidden loop":  h,
		"nil pointer":  (*node)(nil),
		"nil in any":   box{},
	} {
		if _, err := c.Marshal(v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	var got hidden
	data, err := c.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Unmarshal(data, &got); err != nil || got.Name != "h" || got.Skip != nil {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
}

// The JSON codec refuses the same values with the same sentinel.
func TestJSONCycle(t *testing.T) {
	for name, v := range cyclicValues {
		if name == "long cycle" {
			continue // json starts looking for cycles 1,000 pointers down: the same, slower
		}
		if _, err := codec.JSON().Marshal(v()); !errors.Is(err, codec.ErrUnsupportedValue) {
			t.Errorf("%s: JSON Marshal = %v, want ErrUnsupportedValue", name, err)
		}
	}
}
