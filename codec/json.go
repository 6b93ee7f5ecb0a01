package codec

import (
	"encoding/json"
	"errors"
	"fmt"
)

// JSON returns a codec using encoding/json. Marshal of a value json cannot
// represent (a cycle, a NaN or infinite float) returns an error wrapping
// [ErrUnsupportedValue], and of a type it cannot (a channel, a func) one
// wrapping [ErrUnsupportedType].
func JSON() Codec { return jsonCodec{} }

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		var value *json.UnsupportedValueError
		var typ *json.UnsupportedTypeError
		switch {
		case errors.As(err, &value):
			return nil, fmt.Errorf("json: %w: %w", err, ErrUnsupportedValue)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("json: %w: %w", err, ErrUnsupportedType)
		}
		return nil, fmt.Errorf("json: %w", err)
	}
	return b, nil
}

func (jsonCodec) Unmarshal(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("json: %w", err)
	}
	return nil
}

func (jsonCodec) Name() string { return "json" }
