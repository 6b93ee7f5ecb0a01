package codec

import (
	"encoding/json"
	"fmt"
)

// JSON returns a codec using encoding/json.
func JSON() Codec { return jsonCodec{} }

type jsonCodec struct{}

func (jsonCodec) Marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
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
