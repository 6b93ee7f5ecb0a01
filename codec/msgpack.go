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
//
// Marshal of a cyclic value (a pointer, map or slice that leads back to
// itself, such as a map[string]any holding itself) returns an error
// wrapping [ErrUnsupportedValue] that names the type the cycle runs
// through, as the [JSON] codec does; msgpack itself would follow the cycle
// until the stack overflows, which kills the process. Whether a type can
// hold a cycle is decided once per type: a value of one that cannot (no
// interface inside, and not containing itself: a struct of strings,
// numbers, times, slices and maps of them) is encoded as it is; a value of
// one that can is walked first, as msgpack will encode it, recording the
// references on its path only past 1,000 deep (as encoding/json does). The
// walk does not look inside a type that encodes itself (MarshalMsgpack,
// EncodeMsgpack, MarshalBinary, MarshalText): a cycle there is its own.
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
	cycles   cycles
}

type pooledEncoder struct {
	buf *bytes.Buffer
	enc *msgpack.Encoder
}

func (c *msgpackCodec) Marshal(v any) ([]byte, error) {
	// msgpack has no depth limit: a cyclic value would overflow the stack.
	if err := c.cycles.check(v); err != nil {
		return nil, fmt.Errorf("msgpack: encode %T: %w", v, err)
	}
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
