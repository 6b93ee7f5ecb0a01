// Package envelope is the versioned wire format of one queue item.
//
// Every item stored in Redis is an envelope: a fixed 21-byte header that the
// Lua scripts can read and patch without decoding the rest (times, attempt),
// followed by variable-length fields written by Go. Every version shares the
// prefix below (the header, the ID and the headers), so a reader can read and
// rewrite the ID and headers of any version, even one newer than it knows,
// and keep the rest as it is:
//
//	offset  size  field
//	0       1     version (1 or 2; every version is in 1..MaxVersion)
//	1       8     enqueued at, Unix milliseconds, big-endian (Redis server clock)
//	9       8     due at, Unix milliseconds, big-endian (Redis server clock)
//	17      4     attempt, big-endian: deliveries that failed so far
//	21      ...   uvarint len + ID
//	        ...   uvarint count, then count × (uvarint len + key, uvarint len + value)
//	              -- end of the shared prefix --
//	v1:     ...   payload: the codec's bytes, to the end
//	v2:     ...   uvarint count, then count × (uvarint tag, uvarint len + bytes): extensions
//	        ...   payload: the codec's bytes, to the end
//
// Writers use the lowest version that holds the item: version 1 unless it
// carries extensions. Readers skip extension tags they do not know.
//
// The layout is documented in docs/format.md. A reader must accept every
// version it has ever written; an unknown version is an error wrapping
// [ErrUnknownVersion], bytes that are no envelope at all (see [IsEnvelope])
// wrap [ErrNotEnvelope], a malformed envelope wraps [ErrCorrupt]; nothing
// panics.
package envelope

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// Version is the newest envelope version this package reads and writes.
const Version = 2

// MaxVersion is the highest version byte an envelope can ever have. A first
// byte above it (or 0) means the bytes are not an envelope at all; a first
// byte in Version+1..MaxVersion is an envelope from a newer writer.
const MaxVersion = 15

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

// The story of a failing item, written by the scripts that settle
// (story() in internal/lua/prelude.lua):
// HeaderErrors is a JSON array of the errors of its last ErrorsKept failed
// attempts, newest last, each cut to ErrorMax bytes; HeaderDeadAt is when
// it was dead-lettered (Unix ms, Redis server clock), and HeaderAttempts
// after how many deliveries.
const (
	HeaderErrors   = "redelay-errors"
	HeaderDeadAt   = "redelay-dead-at"
	HeaderAttempts = "redelay-attempts"
	ErrorsKept     = 10
	ErrorMax       = 1024
)

// ExtPriority is the extension tag of an item's priority: one byte,
// 1..MaxPriority. An envelope without it (every version 1 envelope) has
// priority 0. The scripts read it (priority_of in prelude.lua) to send the
// item to the queue's priority set.
const ExtPriority = 1

// MaxPriority is the highest priority an item can have.
const MaxPriority = 9

// ExtDeadline is the extension tag of an item's deadline (a TTL): 8 bytes,
// big-endian. A producer writes the TTL in milliseconds (SetTTL); the offer
// script replaces it with the deadline, the item's due time + TTL in Unix
// ms, as it stamps the other times. A receive past the deadline
// dead-letters the item as expired.
const ExtDeadline = 2

// ExtGroup is the extension tag of an item's group (blocking.WithGroup):
// the group's key, as it is. The scripts read it (group_of in
// prelude.lua) to put the item in its group when it is ready.
const ExtGroup = 3

// Limits that keep a corrupt length from allocating wildly.
const (
	maxHeaders    = 1024
	maxExtensions = 1024
)

var (
	// ErrUnknownVersion means the envelope was written by a newer writer.
	ErrUnknownVersion = errors.New("envelope: unknown version")
	// ErrNotEnvelope means the bytes are not an envelope of any version.
	ErrNotEnvelope = errors.New("envelope: not an envelope")
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
	// Ext holds version-2 extension fields by tag. Tags a reader does not
	// know are kept as they are. Nil or empty: the envelope is version 1.
	Ext     map[uint64][]byte
	Payload []byte
	// version is the version read by Unmarshal (0 for a new envelope).
	version byte
}

// Version returns the version the envelope was read with, or the version
// Marshal will write.
func (e *Envelope) Version() int {
	if e.version != 0 {
		return int(e.version)
	}
	if len(e.Ext) > 0 {
		return 2
	}
	return 1
}

// Marshal encodes e, as version 1 unless it has extensions. Times are
// written as Unix milliseconds; a zero time is written as 0 (the offer
// script fills it in).
func (e *Envelope) Marshal() []byte {
	n := HeaderLen + binary.MaxVarintLen64 + len(e.ID) + binary.MaxVarintLen64 + len(e.Payload)
	for k, v := range e.Headers {
		n += 2*binary.MaxVarintLen64 + len(k) + len(v)
	}
	version := byte(1)
	if len(e.Ext) > 0 {
		version = 2
		n += binary.MaxVarintLen64
		for _, v := range e.Ext {
			n += 2*binary.MaxVarintLen64 + len(v)
		}
	}
	b := make([]byte, HeaderLen, n)
	b[0] = version
	binary.BigEndian.PutUint64(b[offEnqueued:], uint64(ms(e.EnqueuedAt)))
	binary.BigEndian.PutUint64(b[offDue:], uint64(ms(e.DueAt)))
	binary.BigEndian.PutUint32(b[offAttempt:], uint32(max(e.Attempt, 0)))
	b = appendString(b, e.ID)
	b = binary.AppendUvarint(b, uint64(len(e.Headers)))
	for k, v := range e.Headers {
		b = appendString(b, k)
		b = appendString(b, v)
	}
	if version == 2 {
		b = binary.AppendUvarint(b, uint64(len(e.Ext)))
		for _, tag := range slices.Sorted(maps.Keys(e.Ext)) {
			b = binary.AppendUvarint(b, tag)
			b = appendString(b, string(e.Ext[tag]))
		}
	}
	return append(b, e.Payload...)
}

// Priority returns e's priority: 0 unless its priority extension holds
// 1..MaxPriority.
func (e *Envelope) Priority() int {
	v := e.Ext[ExtPriority]
	if len(v) != 1 || v[0] > MaxPriority {
		return 0
	}
	return int(v[0])
}

// SetPriority sets e's priority; 0 (or a value outside 1..MaxPriority)
// removes the extension, so that an item of priority 0 stays version 1.
func (e *Envelope) SetPriority(p int) {
	if p <= 0 || p > MaxPriority {
		delete(e.Ext, ExtPriority)
		return
	}
	if e.Ext == nil {
		e.Ext = make(map[uint64][]byte, 1)
	}
	e.Ext[ExtPriority] = []byte{byte(p)}
}

// Group returns e's group key, and false when it has none.
func (e *Envelope) Group() (string, bool) {
	v, ok := e.Ext[ExtGroup]
	return string(v), ok
}

// SetGroup puts e in group g; "" removes the extension (an item offered
// without a group).
func (e *Envelope) SetGroup(g string) {
	if g == "" {
		delete(e.Ext, ExtGroup)
		return
	}
	if e.Ext == nil {
		e.Ext = make(map[uint64][]byte, 1)
	}
	e.Ext[ExtGroup] = []byte(g)
}

// SetTTL gives e a time to live after its due time (see ExtDeadline); 0
// or less removes it.
func (e *Envelope) SetTTL(d time.Duration) {
	if d <= 0 {
		delete(e.Ext, ExtDeadline)
		return
	}
	if e.Ext == nil {
		e.Ext = make(map[uint64][]byte, 1)
	}
	e.Ext[ExtDeadline] = binary.BigEndian.AppendUint64(nil, uint64(max(d.Milliseconds(), 1)))
}

// Deadline returns when an item stored by an offer expires (ExtDeadline),
// and false when it has no deadline.
func (e *Envelope) Deadline() (time.Time, bool) {
	v := e.Ext[ExtDeadline]
	if len(v) != 8 {
		return time.Time{}, false
	}
	return fromMs(binary.BigEndian.Uint64(v)), true
}

// IsEnvelope reports whether b can be an envelope of some version, past or
// future: a version byte in 1..MaxVersion and more than the fixed header.
// The scripts apply the same test; bytes that fail it are dead-lettered
// as they are.
func IsEnvelope(b []byte) bool {
	return len(b) > HeaderLen && b[0] >= 1 && b[0] <= MaxVersion
}

// Unmarshal decodes an envelope of version 1 or 2. Payload aliases b.
func Unmarshal(b []byte) (Envelope, error) {
	return UnmarshalUpTo(b, Version)
}

// UnmarshalUpTo decodes an envelope as a reader that knows versions up to
// maxVersion would: a newer version wraps [ErrUnknownVersion]. Readers of
// older releases are simulated this way in tests.
func UnmarshalUpTo(b []byte, maxVersion int) (Envelope, error) {
	var e Envelope
	rest, err := e.readPrefix(b)
	if err != nil {
		return Envelope{}, err
	}
	if int(e.version) > min(maxVersion, Version) {
		return Envelope{}, fmt.Errorf("%w: version %d (this reader knows up to %d)", ErrUnknownVersion, e.version, min(maxVersion, Version))
	}
	if e.version == 2 {
		if rest, err = e.readExt(rest); err != nil {
			return Envelope{}, err
		}
	}
	e.Payload = rest
	return e, nil
}

// readPrefix decodes the part every version shares and returns the rest.
func (e *Envelope) readPrefix(b []byte) ([]byte, error) {
	if !IsEnvelope(b) {
		switch {
		case len(b) == 0:
			return nil, fmt.Errorf("%w: empty", ErrNotEnvelope)
		case b[0] == 0 || b[0] > MaxVersion:
			return nil, fmt.Errorf("%w: first byte %d", ErrNotEnvelope, b[0])
		default:
			return nil, fmt.Errorf("%w: %d bytes, the header needs more than %d", ErrNotEnvelope, len(b), HeaderLen)
		}
	}
	e.version = b[0]
	e.EnqueuedAt = fromMs(binary.BigEndian.Uint64(b[offEnqueued:]))
	e.DueAt = fromMs(binary.BigEndian.Uint64(b[offDue:]))
	e.Attempt = int(binary.BigEndian.Uint32(b[offAttempt:]))
	rest := b[HeaderLen:]
	var err error
	if e.ID, rest, err = readString(rest, "id"); err != nil {
		return nil, err
	}
	count, k := binary.Uvarint(rest)
	if k <= 0 {
		return nil, fmt.Errorf("%w: header count", ErrCorrupt)
	}
	rest = rest[k:]
	if count > maxHeaders || count > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: %d headers", ErrCorrupt, count)
	}
	if count > 0 {
		e.Headers = make(map[string]string, count)
		for range count {
			var key, val string
			if key, rest, err = readString(rest, "header key"); err != nil {
				return nil, err
			}
			if val, rest, err = readString(rest, "header value"); err != nil {
				return nil, err
			}
			e.Headers[key] = val
		}
	}
	return rest, nil
}

// readExt decodes version 2's extension fields and returns the rest.
func (e *Envelope) readExt(b []byte) ([]byte, error) {
	count, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, fmt.Errorf("%w: extension count", ErrCorrupt)
	}
	rest := b[k:]
	if count > maxExtensions || count > uint64(len(rest)) {
		return nil, fmt.Errorf("%w: %d extensions", ErrCorrupt, count)
	}
	if count > 0 {
		e.Ext = make(map[uint64][]byte, count)
	}
	for range count {
		tag, k := binary.Uvarint(rest)
		if k <= 0 {
			return nil, fmt.Errorf("%w: extension tag", ErrCorrupt)
		}
		var v string
		var err error
		if v, rest, err = readString(rest[k:], "extension"); err != nil {
			return nil, err
		}
		e.Ext[tag] = []byte(v)
	}
	return rest, nil
}

// WithoutDeadline returns raw without its deadline (ExtDeadline): a dead
// letter has none, since an item's deadline ends when it is dead-lettered
// (without_deadline in prelude.lua does the same in the scripts). raw
// comes back as it is when it has no deadline or is not a readable
// version 2 envelope; an envelope left with no extension is version 1.
func WithoutDeadline(raw []byte) []byte {
	if len(raw) == 0 || raw[0] != 2 {
		return raw
	}
	var e Envelope
	rest, err := e.readPrefix(raw)
	if err != nil {
		return raw
	}
	at := len(raw) - len(rest) // the extension count
	count, k := binary.Uvarint(rest)
	if k <= 0 {
		return raw
	}
	for p, i := k, uint64(0); i < count; i++ {
		start := p
		tag, n := binary.Uvarint(rest[p:])
		if n <= 0 {
			return raw
		}
		p += n
		l, n := binary.Uvarint(rest[p:])
		if n <= 0 || l > uint64(len(rest)-p-n) {
			return raw
		}
		p += n + int(l)
		if tag != ExtDeadline {
			continue
		}
		out := make([]byte, 0, len(raw))
		out = append(out, raw[:at]...)
		if count == 1 {
			out[0] = 1
		} else {
			out = binary.AppendUvarint(out, count-1)
			out = append(out, rest[k:start]...)
		}
		return append(out, rest[p:]...)
	}
	return raw
}

// PeekID returns the ID of an encoded envelope of any version without
// decoding the rest.
func PeekID(b []byte) (string, error) {
	if !IsEnvelope(b) {
		var e Envelope
		_, err := e.readPrefix(b)
		return "", err
	}
	id, _, err := readString(b[HeaderLen:], "id")
	return id, err
}

// WithHeader returns raw with header key set to value, and the item's ID.
// It works on every version (they share the prefix that holds the headers)
// and keeps everything after the headers as it is. ok is false, and raw
// comes back unchanged, when raw is not a readable envelope.
func WithHeader(raw []byte, key, value string) (out []byte, id string, ok bool) {
	return withHeaders(raw, func(h map[string]string) { h[key] = value })
}

// withHeaders is WithHeader for the changes set makes to the headers.
func withHeaders(raw []byte, set func(h map[string]string)) (out []byte, id string, ok bool) {
	return rewrite(raw, nil, set)
}

// WithID returns raw with its ID set to id, every version (see
// WithHeader); ok is false, and raw comes back unchanged, when raw is not
// a readable envelope.
func WithID(raw []byte, id string) (out []byte, ok bool) {
	out, _, ok = rewrite(raw, &id, func(map[string]string) {})
	return out, ok
}

// rewrite rebuilds the prefix of raw that every version shares: its ID
// (newID, unless nil) and its headers (after set).
func rewrite(raw []byte, newID *string, set func(h map[string]string)) (out []byte, id string, ok bool) {
	var e Envelope
	rest, err := e.readPrefix(raw)
	if err != nil {
		return raw, "", false
	}
	if newID != nil {
		e.ID = *newID
	}
	h := make(map[string]string, len(e.Headers)+4)
	maps.Copy(h, e.Headers)
	set(h)
	size := len(raw) + len(e.ID)
	for k, v := range h {
		size += len(k) + len(v) + 2*binary.MaxVarintLen64
	}
	b := make([]byte, HeaderLen, size)
	copy(b, raw[:HeaderLen])
	b = appendString(b, e.ID)
	b = binary.AppendUvarint(b, uint64(len(h)))
	for k, v := range h {
		b = appendString(b, k)
		b = appendString(b, v)
	}
	return append(b, rest...), e.ID, true
}

// DeadLetter returns raw as a dead letter, as the scripts write one
// (S.dead_letter in internal/lua/prelude.lua): failure err added to its
// last errors (HeaderErrors) and set as its last failure (HeaderError),
// dead-lettered at at after deliveries deliveries, without its deadline,
// its attempt counter at 0. Bytes that are not a readable envelope come
// back unchanged.
func DeadLetter(raw []byte, err string, deliveries int, at time.Time) []byte {
	out, _, ok := withHeaders(raw, func(h map[string]string) {
		var list []string
		if json.Unmarshal([]byte(h[HeaderErrors]), &list) != nil {
			list = nil
		}
		if len(list) >= ErrorsKept {
			list = list[len(list)-ErrorsKept+1:]
		}
		e := err
		if len(e) > ErrorMax {
			e = e[:ErrorMax]
		}
		b, _ := json.Marshal(append(list, e)) // strings always marshal
		h[HeaderErrors] = string(b)
		h[HeaderError] = err
		h[HeaderDeadAt] = strconv.FormatInt(at.UnixMilli(), 10)
		h[HeaderAttempts] = strconv.Itoa(deliveries)
	})
	if !ok {
		return raw
	}
	return WithAttempt(WithoutDeadline(out), 0)
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

// WithAttempt returns a copy of an encoded envelope of any version with its
// attempt counter set to n (raw itself when it is not an envelope).
func WithAttempt(raw []byte, n int) []byte {
	if !IsEnvelope(raw) {
		return raw
	}
	out := slices.Clone(raw)
	binary.BigEndian.PutUint32(out[offAttempt:], uint32(max(n, 0)))
	return out
}

// Attempt reads the attempt counter of an encoded envelope of any version
// from its fixed header, or 0 when the bytes are not an envelope.
func Attempt(raw []byte) int {
	if !IsEnvelope(raw) {
		return 0
	}
	return int(binary.BigEndian.Uint32(raw[offAttempt:]))
}
