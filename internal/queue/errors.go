package queue

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/store"
)

// Sentinel errors, re-exported by the public packages.
var (
	ErrInvalidQueue    = errors.New("redelay: invalid queue")
	ErrInvalidArgument = errors.New("redelay: invalid argument")
	ErrClosed          = errors.New("redelay: queue closed")
	ErrPayloadTooLarge = errors.New("redelay: payload too large")
	ErrQueueFull       = errors.New("redelay: queue full")
	ErrNotReplicated   = store.ErrNotReplicated
	ErrCorrupt         = errors.New("redelay: corrupt data")
	ErrDecode          = errors.New("redelay: undecodable value")
	ErrLeaseLost       = errors.New("redelay: lease lost")
	ErrDuplicate       = errors.New("redelay: duplicate id")
	ErrOutOfMemory     = errors.New("redelay: Redis out of memory")
	ErrNotFound        = errors.New("redelay: not found")
	ErrNotEmpty        = errors.New("redelay: queue not empty")
	ErrInfoRefused     = errors.New("redelay: INFO refused by the server")
)

// ErrorType is the error.type the telemetry gives an error of a queue
// operation that wraps one of the sentinels ("" for any other): a short
// name for each, documented in package tracing.
func ErrorType(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{
		{ErrLeaseLost, "lease_lost"}, {ErrDuplicate, "duplicate"}, {ErrQueueFull, "queue_full"},
		{ErrNotReplicated, "not_replicated"}, {ErrClosed, "closed"}, {ErrPayloadTooLarge, "payload_too_large"},
		{ErrInvalidArgument, "invalid_argument"}, {ErrInvalidQueue, "invalid_queue"},
		{ErrCorrupt, "corrupt"}, {ErrDecode, "decode"}, {ErrNotFound, "not_found"}, {ErrOutOfMemory, "out_of_memory"}, {ErrNotEmpty, "not_empty"},
	} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return ""
}

// Corrupt returns err marked with ErrCorrupt (see Mark) when it says
// that stored data cannot be read: an error of package envelope, or a
// script's ENVELOPE reply (update.lua). Other errors, and nil, are
// returned as they are.
func Corrupt(err error) error {
	switch {
	case err == nil || errors.Is(err, ErrCorrupt):
		return err
	case errors.Is(err, envelope.ErrCorrupt), errors.Is(err, envelope.ErrNotEnvelope),
		errors.Is(err, envelope.ErrUnknownVersion), redis.HasErrorPrefix(err, "ENVELOPE"):
		return Mark(ErrCorrupt, err)
	}
	return err
}

// Mark returns err, matched by errors.Is with sentinel too; its text is
// err's. The reason a consumer stores in a failed item's error header is
// this text, so marking an error does not change what is stored.
func Mark(sentinel, err error) error {
	return &marked{sentinel, err}
}

type marked struct{ sentinel, err error }

func (e *marked) Error() string   { return e.err.Error() }
func (e *marked) Unwrap() []error { return []error{e.sentinel, e.err} }

// OfferOutcomeUnknown wraps the error of an offer that was sent but whose
// outcome did not come back (its context ended meanwhile, or the reply was
// lost): the item may or may not have been stored, and the offer returns
// the item's ID with the error.
type OfferOutcomeUnknown struct{ Err error }

func (e *OfferOutcomeUnknown) Error() string {
	return fmt.Sprintf("%v (the offer was sent: the item may have been stored)", e.Err)
}

func (e *OfferOutcomeUnknown) Unwrap() error { return e.Err }

// OfferError is the error of an offer call that was sent and failed
// without a result: an error wrapping ErrOutOfMemory when Redis refused it
// for want of memory (the script wrote nothing: not stored), else an
// *OfferOutcomeUnknown (it may have run).
func OfferError(err error) error {
	if store.OutOfMemory(err) {
		return NotStored(err)
	}
	return &OfferOutcomeUnknown{Err: err}
}

// NotStored is the error of an offer that failed with err before or in
// its call: when Redis refused the call, or the queue's check before it,
// for want of memory (store.OutOfMemory), an error that wraps
// ErrOutOfMemory and says nothing was stored; else err.
func NotStored(err error) error {
	if !store.OutOfMemory(err) {
		return err
	}
	return fmt.Errorf("%w, nothing was stored: %w", ErrOutOfMemory, err)
}

// LayoutError: a process opened a queue with another number of partitions
// than the one recorded in Redis. It wraps ErrInvalidQueue.
type LayoutError struct {
	Queue            string
	Recorded, Opened int
}

func (e *LayoutError) Error() string {
	return fmt.Sprintf("%v: queue %s has %d partitions in Redis, this process opened it with %d (blocking.WithPartitions)",
		ErrInvalidQueue, e.Queue, e.Recorded, e.Opened)
}

func (e *LayoutError) Unwrap() error { return ErrInvalidQueue }

// DecodeError is the error of a codec that could not decode the value of
// item id: it wraps the codec's error and is marked with ErrDecode.
func DecodeError(c codec.Codec, id string, err error) error {
	return Mark(ErrDecode, fmt.Errorf("item %s: decode with %s codec: %w", id, c.Name(), err))
}
