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
