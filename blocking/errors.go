package blocking

import (
	"errors"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/queue"
)

// Sentinel errors; every error the package returns wraps one of these, a
// Redis error, a codec error, or a context error.
var (
	// ErrInvalidQueue: the queue was built with a nil client, an
	// unsupported client, a bad name or a bad option. Every call returns
	// it, with the reason.
	ErrInvalidQueue = queue.ErrInvalidQueue
	// ErrInvalidArgument: an argument of a call is out of range (a
	// negative timeout, a reserved header name, a bad Consume option...);
	// the error names it. Nothing was changed.
	ErrInvalidArgument = queue.ErrInvalidArgument
	// ErrClosed: the queue was closed, before or during the call.
	ErrClosed = queue.ErrClosed
	// ErrPayloadTooLarge: the encoded value (and headers) exceed
	// WithMaxPayloadSize.
	ErrPayloadTooLarge = queue.ErrPayloadTooLarge
	// ErrQueueFull: an offer to a queue at its bound (WithMaxSize); nothing
	// was stored. Retry later, or shed the work.
	ErrQueueFull = queue.ErrQueueFull
	// ErrLeaseLost: Ack, Nack or Extend of a delivery whose lease is gone:
	// it expired and the item was made ready again (perhaps delivered to
	// another consumer), or the delivery was already settled or given
	// back. Nothing was changed.
	ErrLeaseLost = queue.ErrLeaseLost
	// ErrNotReplicated: a write of a queue made WithReplicaAck was done on
	// the master, but fewer replicas than asked confirmed it within the
	// timeout. An offer returns its ID with it (the item is stored); an
	// ack or nack with it settled the delivery. The write is lost only if
	// the master fails before a replica copies it. See [WithReplicaAck]
	// for what to do.
	ErrNotReplicated = queue.ErrNotReplicated
	// ErrCorrupt: data stored in Redis for the queue cannot be read by
	// this release: bytes that are no item at all (a foreign write), an
	// item whose encoding is malformed, an item written by a newer
	// release (a newer envelope version, during a rolling upgrade), or a
	// malformed schedule record. The message says which, and names the
	// item. A consumer never returns it: it counts a failed attempt of
	// such an item, then dead-letters it (see WithMaxAttempts), and logs
	// the error. Calls that read one item (delayed.Queue.Get, Update,
	// Schedules) return it; listings (Peek, delayed.Queue.List) leave the
	// item out and log the error; the inspect package shows it raw.
	ErrCorrupt = queue.ErrCorrupt
	// ErrDecode: an item is well formed, but the queue's codec cannot
	// decode its value into T: a producer of another type or codec, a
	// value its codec's decoder refuses, or a codec that panicked. The
	// codec's own error is wrapped too (errors.As finds it). It is
	// returned and handled like ErrCorrupt; it is not ErrCorrupt, since
	// the stored data may be sound for a reader of the right type.
	ErrDecode = queue.ErrDecode
	// ErrOutOfMemory: Redis refused an offer because its memory is at
	// maxmemory (under maxmemory-policy noeviction, which redelay needs:
	// docs/reliability.md). Nothing was stored, and no ID is returned.
	// Offers fail with it until consumers drain items or the server gets
	// more memory; Take, Receive and Ack go on. Shed or retry the work.
	ErrOutOfMemory = queue.ErrOutOfMemory
)

// HeaderError is the Delivery header that holds an item's last failure: the
// error its handler returned, or why it was dead-lettered. Header names
// starting with "redelay-" are reserved for redelay.
const HeaderError = envelope.HeaderError

// SkipRetry wraps err so that, returned by a Consume handler, the delivery
// goes to the dead letters at once, with no more attempts (the error's
// text in its HeaderError). errors.Is and errors.As see err through it.
func SkipRetry(err error) error {
	if err == nil {
		err = errors.New("skip retry")
	}
	return &skipRetry{err}
}

type skipRetry struct{ err error }

func (e *skipRetry) Error() string { return "skip retry: " + e.err.Error() }
func (e *skipRetry) Unwrap() error { return e.err }

// RetryAfter wraps err so that, returned by a Consume handler, the delivery
// is retried after exactly d instead of the backoff (still counting an
// attempt: past WithMaxAttempts it goes to the dead letters). A negative d
// counts as 0. errors.Is and errors.As see err through it.
func RetryAfter(d time.Duration, err error) error {
	if err == nil {
		err = errors.New("retry")
	}
	return &retryAfter{max(d, 0), err}
}

type retryAfter struct {
	d   time.Duration
	err error
}

func (e *retryAfter) Error() string { return fmt.Sprintf("retry after %v: %v", e.d, e.err) }
func (e *retryAfter) Unwrap() error { return e.err }
