// Package contestants adapts each queue under comparison (redelay and its
// peers, and the seed approaches) to one small interface, used as its users
// would use it, with its default settings.
package contestants

import (
	"context"
	"strings"
	"time"
)

// Contestant is one delayed-queue implementation under test.
//
// A contestant is used for one workload against a fresh Redis server:
// Setup, then Offer (from many goroutines) and Consume, then Close.
type Contestant interface {
	// Name identifies the contestant in results ("redelay-take", "asynq"…).
	Name() string
	// Settings describes the non-default settings used, for the report
	// ("defaults" when none).
	Settings() string
	// SetPadding makes every later offer (Offer, OfferBatch) carry n bytes
	// of padding beside the id in the item's value, stored the way the
	// contestant's users store a payload; Cancel and Consume still work by
	// id. 0, the default, offers the id alone. Called before Setup.
	SetPadding(n int)
	// Setup connects to the Redis server at addr (host:port on loopback).
	Setup(ctx context.Context, addr string) error
	// Offer schedules item id to be delivered at due (wall clock). Safe for
	// concurrent use.
	Offer(ctx context.Context, id int, due time.Time) error
	// Consume starts delivering: it calls arrived(id) once per delivery, from
	// any goroutine, as soon as the consumer has the item (before any work).
	// It returns at once; delivery goes on until Close.
	Consume(ctx context.Context, arrived func(id int)) error
	// Close stops consumers and releases everything; it waits for them.
	Close() error
}

// BatchOfferer is implemented by contestants with a batch offer path.
type BatchOfferer interface {
	OfferBatch(ctx context.Context, ids []int, due time.Time) error
}

// Canceler is implemented by contestants that can cancel a pending item by
// the id it was offered with.
type Canceler interface {
	Cancel(ctx context.Context, id int) error
}

// ClientProcess is implemented by contestants whose client runs in a
// process of their own (BullMQ's Node.js worker): the harness adds that
// process's CPU time to its own when it measures what offers cost the
// client. 0 when no such process is running.
type ClientProcess interface {
	ClientPid() int
}

// padding returns n bytes of printable padding (bench/bullmq/worker.mjs
// builds the same string).
func padding(n int) string {
	if n <= 0 {
		return ""
	}
	return strings.Repeat("0123456789abcdef", n/16+1)[:n]
}
