package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
)

// decoder decodes a payload generically: the value, or why it could not.
type decoder func(payload []byte) (v any, why string)

// decoderFor returns the decoder of the codec a queue records, by the name
// its Name method returns (codec.Msgpack, codec.JSON, codec.Raw).
func decoderFor(codec string) decoder {
	switch codec {
	case "msgpack":
		return decodeMsgpack
	case "json":
		return decodeJSON
	case "raw":
		return decodeRaw
	case "":
		return cannotDecode("the queue's codec is not recorded yet (a process records it when it first offers to, consumes or transfers the queue)")
	default:
		return cannotDecode(fmt.Sprintf("the queue's codec %q has no generic decoder (only msgpack, json and raw do)", codec))
	}
}

func cannotDecode(why string) decoder {
	return func([]byte) (any, string) { return nil, why }
}

// decodeJSON decodes with encoding/json into any: numbers are float64.
// A value nested deeper than maxValueDepth is not decoded.
func decodeJSON(payload []byte) (any, string) {
	if err := checkJSONDepth(payload); err != nil {
		return nil, "json: " + err.Error()
	}
	var v any
	if err := json.Unmarshal(payload, &v); err != nil {
		return nil, "json: " + err.Error()
	}
	return v, ""
}

// decodeRaw returns the payload as a string when it is UTF-8 text.
func decodeRaw(payload []byte) (any, string) {
	if utf8.Valid(payload) {
		return string(payload), ""
	}
	return nil, ""
}

// decodeMsgpack decodes one msgpack value into maps with string keys,
// slices and scalars, integers as int64 (uint64 above math.MaxInt64). A
// value nested deeper than maxValueDepth is not decoded.
func decodeMsgpack(payload []byte) (any, string) {
	// The walk first: msgpack makes a slice of the length an array header
	// claims before reading its elements, and recurses once per level.
	if _, err := walkMsgpack(payload); err != nil {
		return nil, "msgpack: " + err.Error()
	}
	dec := msgpack.NewDecoder(bytes.NewReader(payload))
	dec.SetMapDecoder(decodeMsgpackMap)
	v, err := dec.DecodeInterface()
	if err != nil {
		return nil, "msgpack: " + err.Error()
	}
	return widen(v), ""
}

// decodeMsgpackMap decodes a map of any keys into a map[string]any: keys
// that are not strings are formatted with fmt.Sprint (a map[int]T).
func decodeMsgpackMap(d *msgpack.Decoder) (any, error) {
	n, err := d.DecodeMapLen()
	if err != nil || n < 0 {
		return nil, err
	}
	m := make(map[string]any, min(n, 64)) // n is not trusted: the bytes may be corrupt
	for range n {
		k, err := d.DecodeInterface()
		if err != nil {
			return nil, err
		}
		v, err := d.DecodeInterface()
		if err != nil {
			return nil, err
		}
		s, ok := k.(string)
		if !ok {
			s = fmt.Sprint(k)
		}
		m[s] = v
	}
	return m, nil
}

// widen turns the integers msgpack decodes at the width they were encoded
// with (int8, uint16...) into int64, or uint64 above math.MaxInt64, in
// place.
func widen(v any) any {
	switch x := v.(type) {
	case int8:
		return int64(x)
	case int16:
		return int64(x)
	case int32:
		return int64(x)
	case uint8:
		return int64(x)
	case uint16:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x)
		}
	case []any:
		for i := range x {
			x[i] = widen(x[i])
		}
	case map[string]any:
		for k, e := range x {
			x[k] = widen(e)
		}
	}
	return v
}
