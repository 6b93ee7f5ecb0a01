package blocking

import "github.com/redelay/redelay/internal/queue"

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
)
