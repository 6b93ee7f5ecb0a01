package codec

import (
	"encoding"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"
)

// cycleDepth is how many references (pointers, maps, slices) deep a value
// is walked before the walk starts recording the ones on its path, as
// encoding/json does: shallower values cost no bookkeeping, and a cycle is
// found at most cycleDepth references plus one turn of the loop down.
const cycleDepth = 1000

// cycles finds the values msgpack would follow for ever: a pointer, map or
// slice that leads back to itself. msgpack v5.4.1 has no depth limit and no
// hook that would give one (its encoders call each other directly), so it
// recurses until the goroutine's stack overflows, a fatal error that no
// recover catches.
//
// Whether a type can hold a cycle at all is decided once per type and
// cached: only through an interface (which can hold anything) or a type
// that contains itself through a pointer, map or slice. A value of any
// other type (a struct of strings, numbers, slices of them, time.Time...)
// is not walked. The walk follows what msgpack encodes: exported fields
// not tagged "-" and embedded fields, and it stops at a type that encodes
// itself (msgpack.CustomEncoder, msgpack.Marshaler,
// encoding.BinaryMarshaler, encoding.TextMarshaler, error).
type cycles struct {
	types sync.Map // reflect.Type → *cycleType
	// last is the type check saw last, in front of types: a queue encodes
	// values of one type, so it is nearly always the one asked for.
	last atomic.Pointer[lastType]
}

// lastType is a type and what the walk needs to know of it.
type lastType struct {
	t  reflect.Type
	ct *cycleType
}

// cycleType is what the walk needs to know of a type.
type cycleType struct {
	// may: a value of the type can lead back to itself.
	may bool
	// fields of a struct that may: the indexes of its encoded fields whose
	// types may.
	fields [][]int
}

// check returns an error wrapping ErrUnsupportedValue when v leads back to
// itself in what msgpack encodes.
func (c *cycles) check(v any) error {
	switch v.(type) {
	case nil, string, []byte, map[string]any, []any:
		w := cycleWalk{types: c}
		return w.walkAny(v)
	}
	t := reflect.TypeOf(v)
	last := c.last.Load()
	if last == nil || last.t != t {
		last = &lastType{t: t, ct: c.typeOf(t)}
		c.last.Store(last)
	}
	if !last.ct.may {
		return nil
	}
	w := cycleWalk{types: c}
	return w.value(reflect.ValueOf(v))
}

// typeOf returns what the walk needs to know of t, deciding it on first use.
func (c *cycles) typeOf(t reflect.Type) *cycleType {
	if ct, ok := c.types.Load(t); ok {
		return ct.(*cycleType)
	}
	ct := &cycleType{may: mayCycle(t, map[reflect.Type]bool{}, map[reflect.Type]bool{})}
	if ct.may && t.Kind() == reflect.Struct {
		for _, f := range encodedFields(t) {
			if c.typeOf(f.Type).may {
				ct.fields = append(ct.fields, f.Index)
			}
		}
	}
	got, _ := c.types.LoadOrStore(t, ct)
	return got.(*cycleType)
}

// mayCycle reports whether a value of type t can lead back to itself in
// what msgpack encodes: whether t reaches an interface, or itself, through
// the types msgpack follows. path holds the types being looked at, cannot
// those found not to.
func mayCycle(t reflect.Type, path, cannot map[reflect.Type]bool) bool {
	if cannot[t] || encodesItself(t) {
		return false
	}
	if path[t] {
		return true // t contains itself
	}
	var next []reflect.Type
	switch t.Kind() {
	case reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		next = []reflect.Type{t.Elem()}
	case reflect.Map:
		next = []reflect.Type{t.Key(), t.Elem()}
	case reflect.Struct:
		for _, f := range encodedFields(t) {
			next = append(next, f.Type)
		}
	default:
		return false
	}
	path[t] = true
	defer delete(path, t)
	for _, n := range next {
		if mayCycle(n, path, cannot) {
			return true
		}
	}
	cannot[t] = true
	return false
}

// encodesItself reports whether msgpack encodes a value of type t with a
// method of its own (or, for error, with its Error string), as msgpack's
// getEncoder decides: the walk does not look inside.
func encodesItself(t reflect.Type) bool {
	for _, m := range []reflect.Type{
		reflect.TypeFor[msgpack.CustomEncoder](),
		reflect.TypeFor[msgpack.Marshaler](),
		reflect.TypeFor[encoding.BinaryMarshaler](),
		reflect.TypeFor[encoding.TextMarshaler](),
	} {
		if t.Implements(m) || t.Kind() != reflect.Pointer && reflect.PointerTo(t).Implements(m) {
			return true
		}
	}
	return t == reflect.TypeFor[error]()
}

// encodedFields are the fields of struct type t that msgpack encodes:
// exported and embedded ones, less those tagged "-" (the msgpack tag, or
// the json tag when there is none, as the codec sets). An embedded struct
// counts as one field, whether msgpack inlines its fields or not.
func encodedFields(t reflect.Type) []reflect.StructField {
	var fields []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("msgpack")
		if tag == "" {
			tag = f.Tag.Get("json")
		}
		if name, _, _ := strings.Cut(tag, ","); name == "-" {
			continue
		}
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		fields = append(fields, f)
	}
	return fields
}

// cycleWalk walks one value. It counts the references on its path, and
// past cycleDepth records them in seen: meeting one again is a cycle.
type cycleWalk struct {
	types *cycles
	depth int
	seen  map[cycleRef]struct{}
}

// cycleRef identifies a reference on the path. A slice is its array, its
// length and its type (as encoding/json, which also uses the length: a
// shorter slice of the same array is another value); the type keeps apart a
// struct and its first field, which share an address.
type cycleRef struct {
	ptr unsafe.Pointer
	typ reflect.Type
	len int
}

// walkAny walks v, an interface's value. The shapes of decoded JSON-like
// data are walked without reflection.
func (w *cycleWalk) walkAny(v any) error {
	switch v := v.(type) {
	case nil, string, []byte, bool, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, float32, float64:
		return nil
	case map[string]any:
		if len(v) == 0 {
			return nil
		}
		deep := w.down()
		if deep {
			if err := w.record(reflect.ValueOf(v), 0); err != nil {
				return err
			}
		}
		for _, e := range v {
			if err := w.walkAny(e); err != nil {
				return err
			}
		}
		if deep {
			w.forget(reflect.ValueOf(v), 0)
		}
		w.depth--
		return nil
	case []any:
		if len(v) == 0 {
			return nil
		}
		deep := w.down()
		if deep {
			if err := w.record(reflect.ValueOf(v), len(v)); err != nil {
				return err
			}
		}
		for _, e := range v {
			if err := w.walkAny(e); err != nil {
				return err
			}
		}
		if deep {
			w.forget(reflect.ValueOf(v), len(v))
		}
		w.depth--
		return nil
	}
	rv := reflect.ValueOf(v)
	if !w.types.typeOf(rv.Type()).may {
		return nil
	}
	return w.value(rv)
}

// value walks v, whose type may lead back to itself.
func (w *cycleWalk) value(v reflect.Value) error {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if v.CanInterface() {
			return w.walkAny(v.Interface())
		}
		// Reached through an unexported embedded field.
		e := v.Elem()
		if !w.types.typeOf(e.Type()).may {
			return nil
		}
		return w.value(e)
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		if err := w.enter(v, 0); err != nil {
			return err
		}
		if err := w.value(v.Elem()); err != nil {
			return err
		}
		w.leave(v, 0)
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		if err := w.enter(v, v.Len()); err != nil {
			return err
		}
		for i := range v.Len() {
			if err := w.value(v.Index(i)); err != nil {
				return err
			}
		}
		w.leave(v, v.Len())
	case reflect.Array:
		for i := range v.Len() {
			if err := w.value(v.Index(i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		if v.Type() == reflect.TypeFor[map[string]any]() && v.CanInterface() {
			return w.walkAny(v.Interface()) // without reflection
		}
		keys := w.types.typeOf(v.Type().Key()).may
		elems := w.types.typeOf(v.Type().Elem()).may
		if err := w.enter(v, 0); err != nil {
			return err
		}
		// One key and one element, set in turn, rather than a copy of
		// each (which MapIter.Key and Value allocate for most types); not
		// for a map reached through an unexported embedded field, which
		// reflect lets read but not copy from.
		set := v.CanInterface()
		var key, elem reflect.Value
		if keys && set {
			key = reflect.New(v.Type().Key()).Elem()
		}
		if elems && set {
			elem = reflect.New(v.Type().Elem()).Elem()
		}
		it := v.MapRange()
		for it.Next() {
			if keys {
				if set {
					key.SetIterKey(it)
				} else {
					key = it.Key()
				}
				if err := w.value(key); err != nil {
					return err
				}
			}
			if elems {
				if set {
					elem.SetIterValue(it)
				} else {
					elem = it.Value()
				}
				if err := w.value(elem); err != nil {
					return err
				}
			}
		}
		w.leave(v, 0)
	case reflect.Struct:
		for _, index := range w.types.typeOf(v.Type()).fields {
			f, err := v.FieldByIndexErr(index)
			if err != nil {
				continue // through a nil embedded pointer: msgpack encodes nil
			}
			if err := w.value(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// enter counts the reference v (of length n for a slice) on the path, and
// past cycleDepth records it, failing when it is there already.
func (w *cycleWalk) enter(v reflect.Value, n int) error {
	if w.down() {
		return w.record(v, n)
	}
	return nil
}

// leave takes the reference enter counted off the path.
func (w *cycleWalk) leave(v reflect.Value, n int) {
	if w.depth > cycleDepth {
		w.forget(v, n)
	}
	w.depth--
}

// down counts one more reference on the path, and reports whether the
// walk is past cycleDepth: the reference must be recorded.
func (w *cycleWalk) down() bool {
	w.depth++
	return w.depth > cycleDepth
}

// record adds the reference v (of length n for a slice) to those on the
// path, failing when it is there already: v leads back to itself.
func (w *cycleWalk) record(v reflect.Value, n int) error {
	ref := cycleRef{ptr: v.UnsafePointer(), typ: v.Type(), len: n}
	if _, ok := w.seen[ref]; ok {
		return fmt.Errorf("a cycle through %s (the value leads back to itself): %w", v.Type(), ErrUnsupportedValue)
	}
	if w.seen == nil {
		w.seen = map[cycleRef]struct{}{}
	}
	w.seen[ref] = struct{}{}
	return nil
}

// forget takes the reference record added off the path.
func (w *cycleWalk) forget(v reflect.Value, n int) {
	delete(w.seen, cycleRef{ptr: v.UnsafePointer(), typ: v.Type(), len: n})
}
