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
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
	"github.com/redelay/redelay/internal/transfer"
)

// ErrInvalidQueue is returned by Run for a nil or unsupported client, a bad
// queue name or a bad option; it is blocking.ErrInvalidQueue.
var ErrInvalidQueue = blocking.ErrInvalidQueue

// Option configures Run.
type Option func(*options)

type options struct {
	batch  int
	sweep  time.Duration
	logger *slog.Logger
	tel    telemetry.Config
	dead   bool
	err    error
}

// WithBatchSize sets how many due items one script call moves at most (the
// mover repeats while batches come back full). Default 500; at most 5000.
func WithBatchSize(n int) Option {
	return func(o *options) {
		if n < 1 || n > transfer.MaxBatchSize {
			o.err = errors.Join(o.err, fmt.Errorf("WithBatchSize(%d): must be 1..%d", n, transfer.MaxBatchSize))
			return
		}
		o.batch = n
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
		o.sweep = d
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
		o.logger = l
	}
}

// WithTracerProvider and WithMeterProvider set where the mover's transfer
// spans and metrics go (see package tracing). Default: the otel globals.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tel.TracerProvider = tp }
}

// WithMeterProvider: see WithTracerProvider.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.tel.MeterProvider = mp }
}

// WithDeadLetters also transfers each queue's dead-letter queue (the
// retries of items consumed from the dead letters). Default: off.
func WithDeadLetters() Option {
	return func(o *options) { o.dead = true }
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
	o := options{logger: slog.Default()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	var errs []error
	if err := queue.CheckClient(rdb); err != nil {
		errs = append(errs, err)
	}
	if len(queues) == 0 {
		errs = append(errs, errors.New("no queue named"))
	}
	var ks []keys.Queue
	for _, name := range queues {
		k, err := keys.New(name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ks = append(ks, k)
	}
	if o.err != nil {
		errs = append(errs, o.err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("transfer: %w: %w", ErrInvalidQueue, errors.Join(errs...))
	}
	c := store.New(rdb)
	o.tel.ServerAddress, o.tel.ServerPort = telemetry.ServerOf(rdb)
	o.tel.ErrorType = queue.ErrorType
	var regs []*transfer.Registration
	defer func() {
		for _, r := range regs {
			r.Close()
		}
	}()
	var all []keys.Queue // every partition of every queue, and its dead letters
	for _, k := range ks {
		n, err := partitions(ctx, c.Queue(k), o.logger)
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		for i := range n {
			p := k.Partition(i)
			all = append(all, p)
			if o.dead {
				all = append(all, p.Dead())
			}
		}
	}
	for _, k := range all {
		r, err := transfer.Register(transfer.Target{
			Queue: c.Queue(k), BatchSize: o.batch, Sweep: o.sweep, Logger: o.logger,
			Telemetry: telemetry.New(o.tel, k.Name), Announce: k.Part == 0,
		})
		if err != nil {
			return fmt.Errorf("transfer %s: %w: %w", k.Name, ErrInvalidQueue, err)
		}
		regs = append(regs, r)
	}
	<-ctx.Done()
	return fmt.Errorf("transfer: %w", ctx.Err())
}

// partitions reads the number of partitions recorded for the queue whose
// partition 0 is q (blocking.WithPartitions), trying again with backoff
// while Redis cannot be reached, until ctx ends.
func partitions(ctx context.Context, q *store.Queue, log *slog.Logger) (int, error) {
	for failures := 1; ; failures++ {
		n, err := q.RecordedPartitions(ctx)
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		wait := min(time.Duration(failures)*200*time.Millisecond, 5*time.Second)
		log.Warn("redelay: could not read the queue's number of partitions; retrying", "queue", q.K.Name, "err", err, "retry_in", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}
