// Package codec turns queue values into bytes and back.
//
// A [Codec] is chosen once per queue, with blocking.WithCodec. Three are
// provided:
//
//   - [Msgpack], the default: compact, fast, works with any Go value that
//     msgpack/v5 can encode (structs with exported fields, maps, slices…).
//   - [JSON]: readable in redis-cli, interoperable with other languages.
//   - [Raw]: no encoding at all, for queues of []byte or string.
//
// Users may plug in their own: any type with Marshal, Unmarshal and Name.
// The codec only encodes the value; the queue wraps the encoded bytes in its
// own versioned envelope (ID, times, attempt, headers), so changing codecs
// never changes how the queue's metadata is read.
package codec
