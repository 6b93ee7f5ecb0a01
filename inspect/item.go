package inspect

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/redelay/redelay/internal/envelope"
	iqueue "github.com/redelay/redelay/internal/queue"
)

// Item is one item of a queue as the inspector reads it, without taking
// it.
type Item struct {
	// ID is the item's ID; "" for bytes that are no envelope at all (see
	// DecodeError).
	ID    string
	State State // where it was found
	// Attempt is how many times the item was delivered so far, counting a
	// delivery under way (as blocking.Item and river count): 0 for an item
	// never delivered, n for a retry after n failed deliveries, n+1 for an
	// in-flight item after n, and n for a dead letter dead-lettered after
	// n deliveries (plus any since on the dead-letter queue).
	Attempt int
	// DeadAt is when a dead letter was dead-lettered (Redis server clock,
	// to the millisecond); zero for other states, and for dead letters
	// written before this field existed.
	DeadAt time.Time
	// Errors are the errors of the item's last failed attempts (at most
	// the last 10, each cut to 1 KiB), newest last: a handler's error, a
	// Nack's reason, "lease expired", "expired". Headers[HeaderError]
	// holds the last one whole. Nil for an item that never failed.
	Errors     []string
	EnqueuedAt time.Time // when it was first offered (Redis server clock)
	// DueAt is when it falls (or fell) due, on the Redis server's clock:
	// exact to the microsecond for delayed items and retries, to the
	// millisecond otherwise.
	DueAt time.Time
	// LeaseDeadline is when the lease of an in-flight item ends (Redis
	// server clock, to the millisecond); zero for other states and for an
	// item being handed to a consumer (not leased yet).
	LeaseDeadline time.Time
	// Expired: an in-flight item whose lease deadline has passed, by the
	// server's clock when the call read it. The transfer of a process
	// that consumes the queue makes it ready again (or dead-letters it)
	// within its sweep interval; one that stays expired means that no
	// process is consuming the queue.
	Expired bool
	// Priority is the item's priority, 0..blocking.MaxPriority
	// (blocking.WithPriority).
	Priority int
	// Group is the item's group (blocking.WithGroup); "" for none.
	Group string
	// Deadline is when the item expires (blocking.WithTTL): received after
	// it, it goes to the dead letters instead; zero for an item without a
	// TTL, and for a dead letter (its deadline ended with it).
	Deadline time.Time
	// Headers are the producer's headers and redelay's, among them
	// "redelay-error" (blocking.HeaderError): the last failure.
	Headers map[string]string
	// Payload is the codec's bytes as stored; for bytes that cannot be
	// read as an envelope of this release, all of them.
	Payload []byte
	// Value is Payload decoded generically with the queue's codec (see the
	// package documentation); nil when it could not be, and then
	// DecodeError says why. A raw payload that is not UTF-8 text has a nil
	// Value and no DecodeError.
	Value any
	// DecodeError says why Value is nil, or why the bytes are no readable
	// envelope; "" otherwise.
	DecodeError string
}

// view turns entries of one state into Items.
type view struct {
	state  State
	decode decoder
	nowMs  int64 // the server's clock, for Expired (in-flight items only)
}

// newView prepares the reading of entries of state st of q, whose codec
// is named codec. In-flight items are compared with the server's clock,
// read with one more round trip (a read-only script, O(log N)).
func newView(ctx context.Context, q *iqueue.Queue, st State, codec string) (view, error) {
	v := view{state: st, decode: decoderFor(codec)}
	if st == Inflight {
		now, err := q.Now(ctx)
		if err != nil {
			return view{}, err
		}
		v.nowMs = now.UnixMilli()
	}
	return v, nil
}

// items reads entries.
func (v view) items(entries []iqueue.Entry) []Item {
	out := make([]Item, len(entries))
	for i, e := range entries {
		out[i] = v.item(e)
	}
	return out
}

// item reads one entry: an envelope, or bytes that are not one.
func (v view) item(e iqueue.Entry) Item {
	it := Item{State: v.state, Payload: e.Data}
	env, err := envelope.Unmarshal(e.Data)
	if err != nil {
		it.ID, _ = envelope.PeekID(e.Data) // an envelope of a newer version has a readable ID
		it.Attempt = envelope.Attempt(e.Data)
		it.DecodeError = err.Error()
	} else {
		it.ID, it.Attempt, it.Headers, it.Payload = env.ID, env.Attempt, env.Headers, env.Payload
		it.EnqueuedAt, it.DueAt, it.Priority = env.EnqueuedAt, env.DueAt, env.Priority()
		it.Deadline, _ = env.Deadline()
		it.Group, _ = env.Group()
		it.Value, it.DecodeError = v.decode(env.Payload)
		it.Errors = errorsOf(env.Headers)
	}
	switch v.state {
	case Delayed, Retry:
		if e.Score > 0 {
			it.DueAt = time.UnixMicro(e.Score) // the exact score
		}
	case Dead:
		if ms, err := strconv.ParseInt(it.Headers[envelope.HeaderDeadAt], 10, 64); err == nil && ms > 0 {
			it.DeadAt = time.UnixMilli(ms)
		}
		if n, err := strconv.Atoi(it.Headers[envelope.HeaderAttempts]); err == nil && n > 0 {
			it.Attempt += n // the deliveries before it died, then its own on the dead letters
		}
	case Inflight:
		it.Attempt++ // the delivery under way
		if e.Key != "" {
			it.LeaseDeadline = time.UnixMilli(e.Score)
			it.Expired = e.Score <= v.nowMs // as reclaim.lua decides
		}
	}
	return it
}

// errorsOf reads an item's last errors from its headers: the list the
// scripts keep, else the last failure alone (items written before the list
// existed); nil when it never failed.
func errorsOf(h map[string]string) []string {
	if raw, ok := h[envelope.HeaderErrors]; ok {
		var list []string
		if json.Unmarshal([]byte(raw), &list) == nil && len(list) > 0 {
			return list
		}
	}
	if last, ok := h[envelope.HeaderError]; ok {
		return []string{last}
	}
	return nil
}
