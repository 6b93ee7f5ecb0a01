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
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	dec.SetCustomStructTag("json")
	// msgpack (v5.4.1) makes a slice of the length an array header claims
	// before reading its elements, whatever its alloc limit says: 5 bytes
	// claiming 2^32-1 elements make it allocate 64 GB, a fatal out of
	// memory that nothing can recover. Skip walks the value first without
	// keeping it, and fails (EOF) when a length claims more than the bytes
	// present; after it, every length is covered by the bytes.
	if err := dec.Skip(); err != nil {
		return fmt.Errorf("msgpack: %w", err)
	}
	r.Reset(data) // the decoder does not buffer a bytes.Reader: it starts over
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("msgpack: %w", err)
	}
	return nil
}

func (*msgpackCodec) Name() string { return "msgpack" }
