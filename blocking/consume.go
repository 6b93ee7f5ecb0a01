package blocking

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"

	"github.com/redelay/redelay/internal/lua"
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

// maxAckBatch bounds how many acks share one round trip.
const maxAckBatch = 256

// numReceivers is how many receive round trips one Consume keeps in flight.
// Each waits for a batch of concurrency slots out of receivers×concurrency,
// so they can never all hold part of a batch and wait on each other.
const numReceivers = 2

// Consume receives items and runs handler on each, WithConcurrency at a
// time, until ctx ends. A nil result acks the delivery; an error or a panic
// nacks it with the backoff delay for its attempt, and past WithMaxAttempts
// sends it to the dead letters with the error text. While a handler runs,
// its lease is extended every third of the visibility timeout, so long work
// is not redelivered; a crashed process's items come back after at most one
// visibility timeout.
//
// One receiver leases items ahead of the handlers (at most twice the
// concurrency in all, as many as are free in one script call), and the acks
// of handlers that finish together share one round trip, so throughput grows
// with concurrency. At shutdown, items leased ahead that no handler started
// go back to the head of the queue, with no attempt counted.
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

	c := &consumer[T]{
		q: q, handler: handler, opts: o,
		inflight: map[*Delivery[T]]struct{}{},
		acks:     make(chan ackRequest[T], o.concurrency),
	}
	handlerCtx := context.WithoutCancel(ctx)
	var background sync.WaitGroup
	stopExtending := make(chan struct{})
	background.Go(func() { c.extendLeases(handlerCtx, stopExtending) })
	for range numReceivers { // as many ack round trips in flight as receives
		background.Go(func() { c.settleAcks(handlerCtx) })
	}

	// slots counts leased items: those being handled plus up to one
	// handler's worth prefetched, so that the next receive is already under
	// way while handlers work. work feeds a fixed pool of handlers.
	prefetch := numReceivers * o.concurrency
	slots := make(chan struct{}, prefetch)
	work := make(chan *Delivery[T], o.concurrency)
	var handlers sync.WaitGroup
	quit := make(chan struct{}) // closed at shutdown: start no new handler
	for range o.concurrency {
		handlers.Go(func() {
			for {
				select {
				case <-quit:
					return
				case d := <-work:
					select {
					case <-quit:
						c.giveBack(d)
						return
					default:
					}
					c.handle(handlerCtx, d)
					<-slots
				}
			}
		})
	}
	stop := func() {
		close(quit)
		handlers.Wait()
		for len(work) > 0 {
			c.giveBack(<-work)
		}
		c.release(handlerCtx)
		close(stopExtending)
		close(c.acks)
		background.Wait()
	}

	// Two receivers keep two receive round trips in flight; they share the
	// slots, so together they never lease more than prefetch.
	var receivers sync.WaitGroup
	var fatal error
	var fatalOnce sync.Once
	rctx, stopReceiving := context.WithCancel(ctx)
	defer stopReceiving()
	for range numReceivers {
		receivers.Go(func() {
			if err := c.receiveLoop(rctx, slots, o.concurrency, work); err != nil {
				fatalOnce.Do(func() { fatal = err })
				stopReceiving()
			}
		})
	}
	receivers.Wait()
	stop()
	if fatal != nil {
		return fatal
	}
	return fmt.Errorf("consume %s: %w", q.Name(), ctx.Err())
}

// receiveLoop leases items into work until ctx ends; it returns an error
// only when the queue cannot be used at all (closed or invalid).
func (c *consumer[T]) receiveLoop(ctx context.Context, slots chan struct{}, batch int, work chan<- *Delivery[T]) error {
	failures := 0
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		// Wait for a whole handler's worth of slots (those in use are freed
		// as running handlers finish), then lease them in one script call:
		// one batch is handled while the next is fetched.
		free := 1
		for free < batch {
			select {
			case slots <- struct{}{}:
				free++
			case <-ctx.Done():
				for range free {
					<-slots
				}
				return nil
			}
		}
		ds, err := c.q.receive(ctx, free)
		for range free - len(ds) {
			<-slots
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidQueue) {
				return err
			}
			failures++
			wait := backoffOnError(failures)
			c.q.core.Cfg.Logger.Warn("redelay: receive failed; retrying", "queue", c.q.Name(), "err", err, "retry_in", wait)
			sleep(ctx, wait)
			continue
		}
		failures = 0
		for i, d := range ds {
			c.track(d, true)
			select {
			case work <- d:
			case <-ctx.Done(): // shutting down: these go back unhandled
				for _, d := range ds[i:] {
					c.giveBack(d)
				}
				return nil
			}
		}
	}
	return nil
}

type consumer[T any] struct {
	q       *Queue[T]
	handler Handler[T]
	opts    consumeOptions
	acks    chan ackRequest[T]

	mu       sync.Mutex
	inflight map[*Delivery[T]]struct{}
	unused   []*Delivery[T] // leased ahead, never handled: released at shutdown
}

// giveBack sets aside a delivery leased ahead that no handler will run.
func (c *consumer[T]) giveBack(d *Delivery[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, d)
	c.unused = append(c.unused, d)
}

// release returns the deliveries set aside to the head of the ready list,
// with no attempt counted. If that fails they come back anyway when their
// leases expire.
func (c *consumer[T]) release(ctx context.Context) {
	c.mu.Lock()
	ds := c.unused
	c.unused = nil
	c.mu.Unlock()
	if len(ds) == 0 {
		return
	}
	tokens := make([]any, len(ds))
	for i, d := range ds {
		tokens[i] = d.token
	}
	k := c.q.core.Keys
	if err := lua.Release.Run(ctx, c.q.core.RDB, []string{k.Leases, k.Inflight, k.Ready}, tokens...).Err(); err != nil {
		c.q.core.Cfg.Logger.Warn("redelay: could not release items leased ahead; they return after the visibility timeout",
			"queue", c.q.Name(), "items", len(ds), "err", err)
	}
}

type ackRequest[T any] struct {
	d    *Delivery[T]
	done chan error
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
	pctx, span := c.q.core.Tel.StartProcess(ctx, d.ID, d.Attempt, d.Headers)
	start := time.Now()
	err := c.run(pctx, d)
	c.q.core.Tel.Processed(pctx, span, time.Since(start), err)
	var settleErr error
	if err == nil {
		done := make(chan error, 1)
		c.acks <- ackRequest[T]{d, done}
		settleErr = <-done
	} else {
		settleErr = d.nack(ctx, c.opts.backoff(d.Attempt), err.Error())
	}
	if settleErr == nil {
		return
	}
	log := c.q.core.Cfg.Logger.With("queue", c.q.Name(), "id", d.ID, "attempt", d.Attempt)
	if errors.Is(settleErr, ErrLeaseLost) {
		log.Warn("redelay: lease lost before the handler finished; the item may be delivered again", "handler_err", err)
		return
	}
	// The lease will expire and the item come back: at least once.
	log.Error("redelay: could not settle delivery; it will be redelivered after the visibility timeout", "err", settleErr, "handler_err", err)
}

// settleAcks sends the acks of handlers that finish together in one round
// trip, until c.acks is closed.
func (c *consumer[T]) settleAcks(ctx context.Context) {
	batch := make([]ackRequest[T], 0, maxAckBatch)
	ds := make([]*Delivery[T], 0, maxAckBatch)
	for req := range c.acks {
		batch = append(batch[:0], req)
	more:
		for len(batch) < maxAckBatch {
			select {
			case r, ok := <-c.acks:
				if !ok {
					break more
				}
				batch = append(batch, r)
			default:
				break more
			}
		}
		ds = ds[:0]
		for _, r := range batch {
			ds = append(ds, r.d)
		}
		for i, err := range c.q.ackAll(ctx, ds) {
			batch[i].done <- err
		}
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
