package codec

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// Msgpack returns the default codec, MessagePack via
// github.com/vmihailenco/msgpack/v5. Struct fields are encoded by name
// (honouring `msgpack` tags, falling back to `json` tags), so adding or
// removing fields keeps old items readable.
func Msgpack() Codec {
	return &msgpackCodec{encoders: sync.Pool{New: func() any {
		var buf bytes.Buffer
		enc := msgpack.NewEncoder(&buf)
		enc.SetCustomStructTag("json")
		return &pooledEncoder{buf: &buf, enc: enc}
	}}}
}

// msgpackCodec reuses encoders: msgpack.Marshal allocates a fresh one per call.
type msgpackCodec struct {
	encoders sync.Pool
}

type pooledEncoder struct {
	buf *bytes.Buffer
	enc *msgpack.Encoder
}

func (c *msgpackCodec) Marshal(v any) ([]byte, error) {
	pe := c.encoders.Get().(*pooledEncoder)
	defer c.encoders.Put(pe)
	pe.buf.Reset()
	if err := pe.enc.Encode(v); err != nil {
		return nil, fmt.Errorf("msgpack: %w", err)
	}
	return bytes.Clone(pe.buf.Bytes()), nil
}

func (*msgpackCodec) Unmarshal(data []byte, v any) error {
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	dec.SetCustomStructTag("json")
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("msgpack: %w", err)
	}
	return nil
}

func (*msgpackCodec) Name() string { return "msgpack" }
