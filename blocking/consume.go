package blocking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"
)

// Handler processes one delivery for [Queue.Consume]. Returning nil acks
// it; returning an error (or panicking) nacks it with backoff.
type Handler[T any] func(ctx context.Context, d *Delivery[T]) error

// ConsumeOption configures one Consume call.
type ConsumeOption func(*consumeOptions)

type consumeOptions struct {
	concurrency int
	backoff     func(attempt int) time.Duration
	err         error
}

// WithConcurrency sets how many handlers run at once. Default 1.
func WithConcurrency(n int) ConsumeOption {
	return func(o *consumeOptions) {
		if n < 1 {
			o.err = errors.Join(o.err, fmt.Errorf("WithConcurrency(%d): must be at least 1", n))
			return
		}
		o.concurrency = n
	}
}

// WithBackoff sets the retry delay after a handler's failure on the given
// attempt (1-based). Default [DefaultBackoff].
func WithBackoff(f func(attempt int) time.Duration) ConsumeOption {
	return func(o *consumeOptions) {
		if f == nil {
			o.err = errors.Join(o.err, errors.New("WithBackoff(nil)"))
			return
		}
		o.backoff = f
	}
}

// DefaultBackoff is 1 s × 2^(attempt−1), capped at 10 minutes, with ±20 %
// jitter so that items failing together do not retry together.
func DefaultBackoff(attempt int) time.Duration {
	const base, ceiling = time.Second, 10 * time.Minute
	d := ceiling
	if attempt >= 1 && attempt <= 20 {
		d = min(base<<(attempt-1), ceiling)
	}
	return time.Duration(float64(d) * (0.8 + 0.4*rand.Float64()))
}

// Consume receives items and runs handler on each, WithConcurrency at a
// time, until ctx ends. A nil result acks the delivery; an error or a panic
// nacks it with the backoff delay for its attempt, and past WithMaxAttempts
// sends it to the dead letters with the error text. While a handler runs,
// its lease is extended every third of the visibility timeout, so long work
// is not redelivered; a crashed process's items come back after at most one
// visibility timeout.
//
// Handlers get a context that carries ctx's values but not its
// cancellation: when ctx ends, Consume stops receiving, lets running
// handlers finish and settles them, then returns ctx.Err(). Redis errors
// while receiving are logged and retried with backoff; they do not stop
// Consume.
func (q *Queue[T]) Consume(ctx context.Context, handler Handler[T], opts ...ConsumeOption) error {
	o := consumeOptions{concurrency: 1, backoff: DefaultBackoff}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if handler == nil {
		o.err = errors.Join(o.err, errors.New("nil handler"))
	}
	if o.err != nil {
		return fmt.Errorf("consume %s: %w: %w", q.Name(), ErrInvalidQueue, o.err)
	}
	if err := q.core.Err(); err != nil {
		return err
	}

	c := &consumer[T]{q: q, handler: handler, opts: o, inflight: map[*Delivery[T]]struct{}{}}
	handlerCtx := context.WithoutCancel(ctx)
	stopExtending := make(chan struct{})
	var extender sync.WaitGroup
	extender.Go(func() { c.extendLeases(handlerCtx, stopExtending) })

	slots := make(chan struct{}, o.concurrency)
	var running sync.WaitGroup
	failures := 0
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		d, err := q.Receive(ctx)
		if err != nil {
			<-slots
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidQueue) {
				running.Wait()
				close(stopExtending)
				extender.Wait()
				return err
			}
			failures++
			wait := backoffOnError(failures)
			q.core.Cfg.Logger.Warn("redelay: receive failed; retrying", "queue", q.Name(), "err", err, "retry_in", wait)
			sleep(ctx, wait)
			continue
		}
		failures = 0
		c.track(d, true)
		running.Go(func() {
			defer func() { <-slots }()
			c.handle(handlerCtx, d)
		})
	}
	running.Wait()
	close(stopExtending)
	extender.Wait()
	return fmt.Errorf("consume %s: %w", q.Name(), ctx.Err())
}

type consumer[T any] struct {
	q       *Queue[T]
	handler Handler[T]
	opts    consumeOptions

	mu       sync.Mutex
	inflight map[*Delivery[T]]struct{}
}

func (c *consumer[T]) track(d *Delivery[T], on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.inflight[d] = struct{}{}
	} else {
		delete(c.inflight, d)
	}
}

// handle runs the handler and settles the delivery.
func (c *consumer[T]) handle(ctx context.Context, d *Delivery[T]) {
	defer c.track(d, false)
	err := c.run(ctx, d)
	log := c.q.core.Cfg.Logger.With("queue", c.q.Name(), "id", d.ID, "attempt", d.Attempt)
	var settleErr error
	if err == nil {
		settleErr = d.Ack(ctx)
	} else {
		settleErr = d.nack(ctx, c.opts.backoff(d.Attempt), err.Error())
	}
	switch {
	case errors.Is(settleErr, ErrLeaseLost):
		log.Warn("redelay: lease lost before the handler finished; the item may be delivered again", "handler_err", err)
	case settleErr != nil:
		// The lease will expire and the item come back: at least once.
		log.Error("redelay: could not settle delivery; it will be redelivered after the visibility timeout", "err", settleErr, "handler_err", err)
	}
}

// run calls the handler, turning a panic into an error.
func (c *consumer[T]) run(ctx context.Context, d *Delivery[T]) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v", r)
			c.q.core.Cfg.Logger.Error("redelay: handler panicked", "queue", c.q.Name(), "id", d.ID,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return c.handler(ctx, d)
}

// extendLeases keeps the leases of running handlers alive.
func (c *consumer[T]) extendLeases(ctx context.Context, stop <-chan struct{}) {
	vis := c.q.core.Cfg.Visibility
	tick := time.NewTicker(max(vis/3, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		ds := make([]*Delivery[T], 0, len(c.inflight))
		for d := range c.inflight {
			ds = append(ds, d)
		}
		c.mu.Unlock()
		for _, d := range ds {
			if err := d.Extend(ctx, vis); err != nil && !errors.Is(err, ErrLeaseLost) {
				c.q.core.Cfg.Logger.Warn("redelay: lease extension failed", "queue", c.q.Name(), "id", d.ID, "err", err)
			}
		}
	}
}

func backoffOnError(failures int) time.Duration {
	d := time.Duration(min(failures, 7)) * 100 * time.Millisecond * time.Duration(failures)
	return min(d, 5*time.Second)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
