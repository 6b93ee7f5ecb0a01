package queue

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redelay/redelay/codec"
)

// panicking is a codec whose Unmarshal panics with v.
type panicking struct {
	codec.Codec
	v any
}

func (p panicking) Unmarshal([]byte, any) error { panic(p.v) }
func (panicking) Name() string                  { return "panicky" }

// A codec that panics on a stored payload makes Decode return an
// error naming the codec and the panic, as for bytes the codec refuses
// (before: the panic went up through Take, Receive and Consume).
func TestDecodeRecoversCodecPanic(t *testing.T) {
	// msgpack panics on ordinary input: a nil *time.Time read into a
	// time.Time ("reflect: call of reflect.Value.IsNil on struct Value").
	type written struct{ At *time.Time }
	type read struct{ At time.Time }
	mp, err := codec.Msgpack().Marshal(written{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		codec codec.Codec
		want  []string
		is    error
	}{
		{"msgpack", codec.Msgpack(), []string{"msgpack", "panic", "IsNil"}, nil},
		{"panic with a string", panicking{codec.JSON(), "boom"}, []string{"panicky", "panic", "boom"}, nil},
		{"panic with an error", panicking{codec.JSON(), io.ErrUnexpectedEOF}, []string{"panicky", "panic", "unexpected EOF"}, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &Queue{parts: []*part{{Cfg: Config{Codec: tc.codec}}}}
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("Decode panicked: %v", r)
					}
				}()
				_, err = Decode[read](q, Item{ID: "poison", Payload: mp})
			}()
			if err == nil {
				t.Fatal("Decode: no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), "item poison: decode with "+tc.codec.Name()+" codec") {
				t.Errorf("error %q is not worded as a decode error", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("errors.Is(%q, %v) = false", err, tc.is)
			}
		})
	}
}

// An ordinary decode error comes back as it did, wrapped.
func TestDecodeKeepsCodecErrors(t *testing.T) {
	q := &Queue{parts: []*part{{Cfg: Config{Codec: codec.Raw()}}}}
	if _, err := Decode[int](q, Item{ID: "x", Payload: []byte("1")}); !errors.Is(err, codec.ErrUnsupportedType) {
		t.Fatalf("Decode = %v, want ErrUnsupportedType", err)
	}
}
