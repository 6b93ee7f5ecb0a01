// Package transfer runs redelay's mover on its own: a process (a sidecar,
// a small deployment) that moves the due items of named queues to their
// ready lists and makes expired leases ready again, without consuming.
//
// Most applications never need it: every process that consumes a queue
// (Take, Poll, Receive, Consume) or holds a delayed.Queue transfers that
// queue already. Run it when producers and consumers come and go (a
// serverless producer, consumers scaled to zero) and due items must still
// become ready on time, or to keep transfer work off consumer hosts.
//
//	err := transfer.Run(ctx, rdb, []string{"orders", "webhooks"})
//
// Run shares the process's transfer service with any queue of the same
// client, so it may run beside consumers. Any number of processes may
// transfer a queue at once; every move is one atomic script, so no item
// moves twice.
package transfer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/queue"
)

// ErrInvalidQueue is returned by Run for a nil or unsupported client, a bad
// queue name or a bad option; it is blocking.ErrInvalidQueue.
var ErrInvalidQueue = blocking.ErrInvalidQueue

// Option configures Run.
type Option func(*options)

type options struct {
	f   queue.FollowOptions
	err error
}

// WithBatchSize sets how many due items one script call moves at most (the
// mover repeats while batches come back full). Default 500; at most 5000.
func WithBatchSize(n int) Option {
	return func(o *options) {
		if n < 1 || n > queue.MaxBatchSize {
			o.err = errors.Join(o.err, fmt.Errorf("WithBatchSize(%d): must be 1..%d", n, queue.MaxBatchSize))
			return
		}
		o.f.BatchSize = n
	}
}

// WithSweepInterval sets the longest wait between two runs when nothing is
// known to be due: it bounds how late an item can be when a wake-up
// notification is lost. Default 1 s; 1 ms to 1 h.
func WithSweepInterval(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond || d > time.Hour {
			o.err = errors.Join(o.err, fmt.Errorf("WithSweepInterval(%v): must be 1ms to 1h", d))
			return
		}
		o.f.Sweep = d
	}
}

// WithLogger sets where the mover logs (errors, reclaimed leases). Default:
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.err = errors.Join(o.err, errors.New("WithLogger(nil)"))
			return
		}
		o.f.Logger = l
	}
}

// WithTracerProvider and WithMeterProvider set where the mover's transfer
// spans and metrics go (see package tracing). Default: the otel globals.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.f.Telemetry.TracerProvider = tp }
}

// WithMeterProvider: see WithTracerProvider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.f.Telemetry.MeterProvider = mp }
}

// WithDeadLetters also transfers each queue's dead-letter queue (the
// retries of items consumed from the dead letters). Default: off.
func WithDeadLetters() Option {
	return func(o *options) { o.f.Dead = true }
}

// WithPrefix transfers the queues whose keys start with prefix, the one
// their processes gave blocking.WithPrefix. Default: "redelay". A bad
// prefix (empty, braces, whitespace) makes Run return ErrInvalidQueue.
func WithPrefix(prefix string) Option {
	return func(o *options) {
		if err := queue.CheckPrefix(prefix); err != nil {
			o.err = errors.Join(o.err, fmt.Errorf("WithPrefix: %w", err))
			return
		}
		o.f.Prefix = prefix
	}
}

// Run transfers the named queues until ctx ends, then returns an error
// wrapping ctx.Err(). It returns an error wrapping [ErrInvalidQueue] at
// once for a nil client, a *redis.Ring, a bad name (or none) or a bad
// option. Redis errors do not stop it: they are logged and retried with
// backoff. A queue opened with blocking.WithPartitions is transferred in
// every partition: Run reads their number from Redis when it starts
// (retrying while Redis cannot be reached). The items' max attempts (for leases that expire on their last
// attempt) are those the consumers recorded in Redis, else 10.
func Run(ctx context.Context, rdb redis.UniversalClient, queues []string, opts ...Option) error {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return queue.Follow(ctx, rdb, queues, o.f, o.err)
}
