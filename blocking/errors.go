package blocking

import (
	"errors"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/queue"
)

// Sentinel errors; every error the package returns wraps one of these, a
// Redis error, a codec error, or a context error.
var (
	// ErrInvalidQueue: the queue was built with a nil client, a bad name or
	// a bad option. Every call returns it, with the reason.
	ErrInvalidQueue = queue.ErrInvalidQueue
	// ErrClosed: the queue was closed.
	ErrClosed = queue.ErrClosed
	// ErrPayloadTooLarge: the encoded value exceeds WithMaxPayloadSize.
	ErrPayloadTooLarge = queue.ErrPayloadTooLarge
	// ErrLeaseLost: Ack, Nack or Extend of a delivery whose lease is gone:
	// it expired and the item was made ready again (perhaps delivered to
	// another consumer), or the delivery was already acked or nacked.
	// Nothing was changed.
	ErrLeaseLost = errors.New("redelay: lease lost")
)

// HeaderError is the Delivery header that holds an item's last failure: the
// error its handler returned, or why it was dead-lettered.
const HeaderError = envelope.HeaderError
