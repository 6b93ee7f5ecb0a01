package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// maxJSONDepth is how many levels of arrays and objects FormatJSON
// writes.
const maxJSONDepth = 100

// JSONText is a value written as JSON text by [FormatJSON].
type JSONText struct {
	// Text is the JSON text: valid JSON when nothing was cut (Cut).
	Text string
	// Deep: arrays and objects nested more than 100 levels deep are
	// written as […] and {…}.
	Deep bool
	// Long: the value's text is longer than the bound FormatJSON was
	// given; Text stops there and ends with "…".
	Long bool

	max int // the bound
}

// Cut reports whether Text is less than the whole value.
func (t JSONText) Cut() bool { return t.Deep || t.Long }

// Note says what Text leaves out, for people: "cut at 2000 bytes",
// "arrays and objects nested deeper than 100 levels shown as […] and
// {…}", or both; "" when nothing.
func (t JSONText) Note() string {
	var parts []string
	if t.Long {
		parts = append(parts, "cut at "+formatSize(t.max))
	}
	if t.Deep {
		parts = append(parts, fmt.Sprintf("arrays and objects nested deeper than %d levels shown as […] and {…}", maxJSONDepth))
	}
	return strings.Join(parts, "; ")
}

// formatSize writes n bytes as "2000 bytes", or in KiB or MiB when it is
// a whole number of them.
func formatSize(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// FormatJSON writes v, a value as [Item.Value] holds it, as JSON text for
// people and tools: indented with indent as json.MarshalIndent indents
// (compact on one line when indent is ""), object keys in order, []byte
// in base64, times in RFC 3339, and the numbers JSON cannot hold (NaN,
// ±Inf) as the strings "NaN", "+Inf" and "-Inf". Characters are not
// escaped for HTML: the caller escapes for where the text goes.
//
// Two bounds keep a small payload from making a huge text (indentation
// grows with the square of the depth): arrays and objects nested more
// than 100 levels deep are written as […] and {…}, and the text stops at
// max bytes (max <= 0: no bound), on a character boundary, followed by
// "…". FormatJSON never builds more than a few times max bytes, whatever
// v holds.
func FormatJSON(v any, indent string, max int) JSONText {
	w := jsonWriter{indent: indent, max: max}
	w.scratch.enc = json.NewEncoder(&w.scratch.buf)
	w.scratch.enc.SetEscapeHTML(false)
	w.value(v, 0)
	t := JSONText{Deep: w.deep, max: max}
	if max > 0 && len(w.buf) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(w.buf[cut]) {
			cut--
		}
		w.buf = append(w.buf[:cut], "…"...)
		t.Long = true
	}
	t.Text = string(w.buf)
	return t
}

// jsonWriter writes one value for FormatJSON.
type jsonWriter struct {
	buf    []byte
	indent string
	max    int
	deep   bool
	// scratch encodes scalars as encoding/json does.
	scratch struct {
		buf bytes.Buffer
		enc *json.Encoder
	}
}

// full reports whether the text is past its bound: nothing more is
// written.
func (w *jsonWriter) full() bool { return w.max > 0 && len(w.buf) > w.max }

// value writes v, an array's element or an object's value at depth
// levels of arrays and objects.
func (w *jsonWriter) value(v any, depth int) {
	if w.full() {
		return
	}
	switch x := v.(type) {
	case []any:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return
		}
		w.container('[', ']', len(x), depth, func(i int) {
			w.value(x[i], depth+1)
		})
	case map[string]any:
		if x == nil {
			w.buf = append(w.buf, "null"...)
			return
		}
		var keys []string
		if len(x) > 0 && depth < maxJSONDepth {
			keys = make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
		}
		w.container('{', '}', len(x), depth, func(i int) {
			w.scalar(keys[i])
			w.buf = append(w.buf, ':')
			if w.indent != "" {
				w.buf = append(w.buf, ' ')
			}
			w.value(x[keys[i]], depth+1)
		})
	case float64:
		w.float(x, math.IsNaN(x) || math.IsInf(x, 0))
	case float32:
		w.float(x, math.IsNaN(float64(x)) || math.IsInf(float64(x), 0))
	default:
		w.scalar(v)
	}
}

// container writes an array or an object of n elements at depth,
// writing element i with elem; past maxJSONDepth only its brackets
// around "…".
func (w *jsonWriter) container(open, close byte, n, depth int, elem func(i int)) {
	w.buf = append(w.buf, open)
	switch {
	case n == 0:
	case depth >= maxJSONDepth:
		w.buf = append(w.buf, "…"...)
		w.deep = true
	default:
		for i := range n {
			if i > 0 {
				w.buf = append(w.buf, ',')
			}
			w.newline(depth + 1)
			if elem(i); w.full() {
				return
			}
		}
		w.newline(depth)
	}
	w.buf = append(w.buf, close)
}

// newline starts a line indented depth times, when indenting.
func (w *jsonWriter) newline(depth int) {
	if w.indent == "" {
		return
	}
	w.buf = append(w.buf, '\n')
	for range depth {
		w.buf = append(w.buf, w.indent...)
	}
}

// float writes f, or its name when JSON cannot hold it.
func (w *jsonWriter) float(f any, named bool) {
	if named {
		f = fmt.Sprint(f) // NaN, +Inf, -Inf
	}
	w.scalar(f)
}

// scalar writes v as encoding/json does, without escaping for HTML. Of a
// string or []byte longer than what is left below the bound, only as much
// as crosses it is encoded.
func (w *jsonWriter) scalar(v any) {
	if w.max > 0 {
		left := w.max - len(w.buf) + 1
		switch x := v.(type) {
		case string:
			if len(x) > left {
				v = x[:left]
			}
		case []byte:
			if len(x) > left {
				v = x[:left]
			}
		}
	}
	w.scratch.buf.Reset()
	if err := w.scratch.enc.Encode(v); err != nil {
		w.scratch.buf.Reset()
		_ = w.scratch.enc.Encode(fmt.Sprint(v))
	}
	w.buf = append(w.buf, bytes.TrimSuffix(w.scratch.buf.Bytes(), []byte("\n"))...)
}
