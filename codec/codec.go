package codec

import "errors"

// Codec encodes and decodes the values of a queue.
//
// Implementations must be safe for concurrent use.
type Codec interface {
	// Marshal encodes v.
	Marshal(v any) ([]byte, error)
	// Unmarshal decodes data into v, which is a non-nil pointer.
	Unmarshal(data []byte, v any) error
	// Name identifies the codec, for errors and telemetry ("msgpack", "json", "raw").
	Name() string
}

// ErrUnsupportedType is returned by a codec asked to encode or decode a type
// it cannot handle, such as [Raw] with a struct.
var ErrUnsupportedType = errors.New("codec: unsupported type")

// ErrUnsupportedValue is returned by a codec asked to encode a value it
// cannot represent although it handles the value's type: a cyclic value (a
// pointer, map or slice that leads back to itself), which has no finite
// encoding, with [Msgpack] and [JSON]; a NaN or infinite float with [JSON].
// It is kept apart from [ErrUnsupportedType] because the type is fine: the
// same type without the cycle encodes, so a caller must not take the error
// as "this type can never be sent".
var ErrUnsupportedValue = errors.New("codec: unsupported value")
