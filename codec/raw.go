package codec

import "fmt"

// Raw returns a codec that stores []byte and string values as they are.
// Any other type returns an error wrapping [ErrUnsupportedType].
func Raw() Codec { return rawCodec{} }

type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	switch x := v.(type) {
	case []byte:
		return x, nil
	case string:
		return []byte(x), nil
	case *[]byte:
		if x != nil {
			return *x, nil
		}
	case *string:
		if x != nil {
			return []byte(*x), nil
		}
	}
	return nil, fmt.Errorf("raw: marshal %T: %w", v, ErrUnsupportedType)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	switch x := v.(type) {
	case *[]byte:
		if x != nil {
			*x = append((*x)[:0:0], data...)
			return nil
		}
	case *string:
		if x != nil {
			*x = string(data)
			return nil
		}
	}
	return fmt.Errorf("raw: unmarshal into %T: %w", v, ErrUnsupportedType)
}

func (rawCodec) Name() string { return "raw" }
