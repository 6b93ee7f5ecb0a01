// Package envelope is the versioned wire format of one queue item.
//
// Every item stored in Redis is an envelope: a fixed 21-byte header that the
// Lua scripts can read and patch without decoding the rest (times, attempt),
// followed by variable-length fields written by Go:
//
//	offset  size  field
//	0       1     version (1)
//	1       8     enqueued at, Unix milliseconds, big-endian (Redis server clock)
//	9       8     due at, Unix milliseconds, big-endian (Redis server clock)
//	17      4     attempt, big-endian: deliveries that failed so far
//	21      ...   uvarint len + ID
//	        ...   uvarint count, then count × (uvarint len + key, uvarint len + value)
//	        ...   payload: the codec's bytes, to the end
//
// The layout is documented in docs/format.md. A reader must accept every
// version it has ever written; an unknown version or a malformed envelope is
// an error wrapping [ErrUnknownVersion] or [ErrCorrupt], never a panic.
package envelope

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// Version is the envelope version this package writes.
const Version = 1

// HeaderLen is the size of the fixed header the Lua scripts patch.
const HeaderLen = 21

// Offsets of the fixed header fields, shared with the Lua scripts.
const (
	offEnqueued = 1
	offDue      = 9
	offAttempt  = 17
)

// HeaderError is the header holding the last failure of an item: the error
// a handler returned, or why it was dead-lettered.
const HeaderError = "redelay-error"

// Limits that keep a corrupt length from allocating wildly.
const (
	maxHeaders = 1024
)

var (
	// ErrUnknownVersion means the envelope was written by a newer or foreign writer.
	ErrUnknownVersion = errors.New("envelope: unknown version")
	// ErrCorrupt means the bytes are not a well-formed envelope.
	ErrCorrupt = errors.New("envelope: corrupt")
)

// Envelope is one item with its metadata.
type Envelope struct {
	ID         string
	EnqueuedAt time.Time // set by the Redis server when the item is offered
	DueAt      time.Time // when the item may be delivered, Redis server clock
	Attempt    int       // deliveries that failed (nacked, lease expired); the next delivery is Attempt+1
	Headers    map[string]string
	Payload    []byte
}

// Marshal encodes e. Times are written as Unix milliseconds; a zero time is
// written as 0 (the offer script fills it in).
func (e *Envelope) Marshal() []byte {
	n := HeaderLen + binary.MaxVarintLen64 + len(e.ID) + binary.MaxVarintLen64 + len(e.Payload)
	for k, v := range e.Headers {
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	b := make([]byte, HeaderLen, n)
	b[0] = Version
	binary.BigEndian.PutUint64(b[offEnqueued:], uint64(ms(e.EnqueuedAt)))
	binary.BigEndian.PutUint64(b[offDue:], uint64(ms(e.DueAt)))
	binary.BigEndian.PutUint32(b[offAttempt:], uint32(max(e.Attempt, 0)))
	b = appendString(b, e.ID)
	b = binary.AppendUvarint(b, uint64(len(e.Headers)))
	for k, v := range e.Headers {
		b = appendString(b, k)
		b = appendString(b, v)
	}
	return append(b, e.Payload...)
}

// Unmarshal decodes an envelope. Payload aliases b.
func Unmarshal(b []byte) (Envelope, error) {
	var e Envelope
	if len(b) == 0 {
		return e, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if b[0] != Version {
		return e, fmt.Errorf("%w: %d (this reader knows %d)", ErrUnknownVersion, b[0], Version)
	}
	if len(b) < HeaderLen {
		return e, fmt.Errorf("%w: %d bytes, header needs %d", ErrCorrupt, len(b), HeaderLen)
	}
	e.EnqueuedAt = fromMs(binary.BigEndian.Uint64(b[offEnqueued:]))
	e.DueAt = fromMs(binary.BigEndian.Uint64(b[offDue:]))
	e.Attempt = int(binary.BigEndian.Uint32(b[offAttempt:]))
	rest := b[HeaderLen:]
	var err error
	if e.ID, rest, err = readString(rest, "id"); err != nil {
		return Envelope{}, err
	}
	count, k := binary.Uvarint(rest)
	if k <= 0 {
		return Envelope{}, fmt.Errorf("%w: header count", ErrCorrupt)
	}
	rest = rest[k:]
	if count > maxHeaders || count > uint64(len(rest)) {
		return Envelope{}, fmt.Errorf("%w: %d headers", ErrCorrupt, count)
	}
	if count > 0 {
		e.Headers = make(map[string]string, count)
		for range count {
			var key, val string
			if key, rest, err = readString(rest, "header key"); err != nil {
				return Envelope{}, err
			}
			if val, rest, err = readString(rest, "header value"); err != nil {
				return Envelope{}, err
			}
			e.Headers[key] = val
		}
	}
	e.Payload = rest
	return e, nil
}

// PeekID returns the ID of an encoded envelope without decoding the rest.
func PeekID(b []byte) (string, error) {
	if len(b) == 0 || b[0] != Version {
		_, err := Unmarshal(b)
		return "", err
	}
	if len(b) < HeaderLen {
		return "", fmt.Errorf("%w: short header", ErrCorrupt)
	}
	id, _, err := readString(b[HeaderLen:], "id")
	return id, err
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func readString(b []byte, what string) (string, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return "", nil, fmt.Errorf("%w: %s length", ErrCorrupt, what)
	}
	end := k + int(n)
	return string(b[k:end]), b[end:], nil
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMs(v uint64) time.Time {
	if v == 0 || v > 1<<53 {
		return time.Time{}
	}
	return time.UnixMilli(int64(v))
}

// WithError returns raw with HeaderError set to reason, and the item's ID.
// Bytes that are not a readable envelope come back unchanged, with no ID:
// they are kept as they are for inspection.
func WithError(raw []byte, reason string) (out []byte, id string) {
	e, err := Unmarshal(raw)
	if err != nil {
		return raw, ""
	}
	h := make(map[string]string, len(e.Headers)+1)
	for k, v := range e.Headers {
		h[k] = v
	}
	h[HeaderError] = reason
	e.Headers = h
	return e.Marshal(), e.ID
}

// Attempt reads the attempt counter of an encoded envelope from its fixed
// header, or 0 when the bytes are not a readable version-1 header.
func Attempt(raw []byte) int {
	if len(raw) < HeaderLen || raw[0] != Version {
		return 0
	}
	return int(binary.BigEndian.Uint32(raw[offAttempt:]))
}
