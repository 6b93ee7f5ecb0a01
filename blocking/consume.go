package blocking

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/telemetry"
)

// Handler processes one delivery for [Queue.Consume]. Returning nil acks
// it; returning an error (or panicking) nacks it with backoff; wrap the
// error with [SkipRetry] to dead-letter it at once, or with [RetryAfter]
// to choose the delay. A handler may also settle the delivery itself (Ack,
// Nack); Consume then leaves it as it is.
type Handler[T any] func(ctx context.Context, d *Delivery[T]) error

// ConsumeOption configures one Consume call.
type ConsumeOption func(*consumeOptions)

type consumeOptions struct {
	concurrency     int
	backoff         func(attempt int) time.Duration
	shutdownTimeout time.Duration
	handlerTimeout  time.Duration
	limits          queue.Limits // WithRateLimit, WithGlobalConcurrency
	err             error
}

func (o *consumeOptions) fail(err error) {
	o.err = errors.Join(o.err, err)
}

// DefaultShutdownTimeout is how long running handlers get to finish once
// Consume's context ends, unless WithShutdownTimeout says otherwise.
const DefaultShutdownTimeout = 30 * time.Second

// WithConcurrency sets how many handlers run at once. Default 1; at most
// 10,000.
func WithConcurrency(n int) ConsumeOption {
	return func(o *consumeOptions) {
		if n < 1 || n > 10000 {
			o.fail(fmt.Errorf("WithConcurrency(%d): must be 1 to 10000", n))
			return
		}
		o.concurrency = n
	}
}

// WithBackoff sets the retry delay after a handler's failure on the given
// attempt (1-based). Default [DefaultBackoff]. A negative or out-of-range
// result counts as 0 (retry at once).
func WithBackoff(f func(attempt int) time.Duration) ConsumeOption {
	return func(o *consumeOptions) {
		if f == nil {
			o.fail(errors.New("WithBackoff(nil)"))
			return
		}
		o.backoff = f
	}
}

// WithShutdownTimeout bounds shutdown: once Consume's context ends, items
// leased ahead that no handler started go back to the queue at once, and
// running handlers get d to finish. Then their context is cancelled and
// their items go back to the head of the queue at once (no attempt is
// counted: the item did not fail), and Consume returns after the handlers
// do (waiting at most another second for handlers that ignore their
// context). Default [DefaultShutdownTimeout] (30 s); 0 cancels the
// handlers at once; -1 waits for them however long they take.
func WithShutdownTimeout(d time.Duration) ConsumeOption {
	return func(o *consumeOptions) {
		if d < -1 {
			o.fail(fmt.Errorf("WithShutdownTimeout(%v): must be at least 0, or -1", d))
			return
		}
		o.shutdownTimeout = d
	}
}

// WithHandlerTimeout gives each handler call a context with this deadline;
// a handler that returns the context's error is retried with backoff like
// any failure. Default: none. At least 1 ms.
func WithHandlerTimeout(d time.Duration) ConsumeOption {
	return func(o *consumeOptions) {
		if d < time.Millisecond {
			o.fail(fmt.Errorf("WithHandlerTimeout(%v): must be at least 1ms", d))
			return
		}
		o.handlerTimeout = d
	}
}

// maxRateAhead bounds how far ahead of now a rate-limited Consume leases
// items whose start slots are later (see WithRateLimit).
const maxRateAhead = time.Second

// WithRateLimit makes every Consume of the queue that passes it share one
// rate: at most n deliveries started per per, across all processes. Starts
// are spread evenly, one every per/n (no bursts), on one timeline kept in
// Redis and checked inside the receive script: an item leased while the
// rate allows costs no extra round trip, and when it does not, Consume
// sleeps until the next free start instead of polling. A Consume leases
// items whose starts fall up to min(per, 1 s) ahead and runs each handler
// at its start, so the fleet's handlers start in step with the rate
// whatever the number of processes. Every process should pass the same
// rate (each spaces its own starts by its own per/n on the shared
// timeline). A start handed to a process that dies is not reused, so a
// crash can only lower the rate. Not available on a queue of several
// partitions (WithPartitions): Consume returns [ErrInvalidArgument].
// Default: none. n at least 1, per at least 1 ms, per/n at least 1 µs.
func WithRateLimit(n int, per time.Duration) ConsumeOption {
	return func(o *consumeOptions) {
		if n < 1 || per < time.Millisecond || per/time.Duration(n) < time.Microsecond {
			o.fail(fmt.Errorf("WithRateLimit(%d, %v): want n >= 1, per >= 1ms, per/n >= 1µs", n, per))
			return
		}
		o.limits.Interval = per / time.Duration(n)
		o.limits.Ahead = min(per, maxRateAhead)
	}
}

// WithGlobalConcurrency makes every Consume of the queue that passes it
// share one limit: at most n items in flight (leased) across all
// processes. The count is the queue's leases, checked inside the receive
// script; Receive calls of other consumers count too. A Consume with this
// option leases only for idle handlers (no lease ahead), and waits for a
// lease to end without polling: each delivery it settles wakes one waiting
// consumer (one more round trip per item). A crashed process's share comes
// back when its leases expire (WithVisibilityTimeout). Not available on a
// queue of several partitions (WithPartitions): Consume returns
// [ErrInvalidArgument]. Default: none; at least 1.
func WithGlobalConcurrency(n int) ConsumeOption {
	return func(o *consumeOptions) {
		if n < 1 {
			o.fail(fmt.Errorf("WithGlobalConcurrency(%d): must be at least 1", n))
			return
		}
		o.limits.Concurrency = n
	}
}

// DefaultBackoff is 1 s × 2^(attempt−1), capped at 10 minutes, with ±20 %
// jitter so that items failing together do not retry together.
func DefaultBackoff(attempt int) time.Duration { return queue.DefaultBackoff(attempt) }

// numReceivers is how many receive round trips one Consume keeps in flight.
// Each waits for a batch of concurrency slots out of receivers×concurrency,
// one receiver gathering at a time: two gathering at once could each hold
// part of a batch while running handlers hold the rest, and both wait
// with handlers idle.
const numReceivers = 2

// handlerGrace is how long Consume waits for handlers whose context it
// cancelled at shutdown before it returns without them.
const handlerGrace = time.Second

// Consume receives items and runs handler on each, WithConcurrency at a
// time, until ctx ends. A nil result acks the delivery; an error or a panic
// nacks it with the backoff delay for its attempt ([SkipRetry] and
// [RetryAfter] change that), and past WithMaxAttempts sends it to the dead
// letters with the error text. A delivery the handler settled itself is
// left as it is. While a handler runs, its lease is extended every third of
// the visibility timeout (one round trip for all of them), so long work is
// not redelivered; a crashed process's items come back after at most one
// visibility timeout.
//
// Two receivers lease items ahead of the handlers (at most twice the
// concurrency in all, as many as are free in one script call), and the acks
// of handlers that finish together share one round trip, so throughput
// grows with concurrency.
//
// While it runs, Consume is listed by inspect's Consumers (host, PID,
// queue, concurrency, items in flight, started, last seen): it refreshes
// its record in Redis every 5 s and removes it when it returns; a record
// of a process that crashed stops being listed within 30 s.
//
// Handlers get a context that carries ctx's values but not its
// cancellation (WithHandlerTimeout gives it a deadline). When ctx ends,
// Consume stops receiving, gives back at once the items leased ahead that
// no handler started, lets running handlers finish (WithShutdownTimeout,
// 30 s by default, then cancels them and gives their items back), settles
// them, and returns ctx.Err(); it returns [ErrClosed] when the queue is
// closed. Redis errors while receiving are logged and retried with backoff;
// they do not stop Consume. Invalid options return [ErrInvalidArgument].
func (q *Queue[T]) Consume(ctx context.Context, handler Handler[T], opts ...ConsumeOption) error {
	o := consumeOptions{concurrency: 1, backoff: DefaultBackoff, shutdownTimeout: DefaultShutdownTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if handler == nil {
		o.fail(errors.New("nil handler"))
	}
	if q.q.Partitions() > 1 && (o.limits.Interval > 0 || o.limits.Concurrency > 0) {
		// One script cannot see the partitions' keys (other slots), so
		// the limits could not be kept across them.
		o.fail(fmt.Errorf("WithRateLimit and WithGlobalConcurrency cannot be used on a queue of %d partitions (WithPartitions)", q.q.Partitions()))
	}
	if o.err != nil {
		return fmt.Errorf("consume %s: %w: %w", q.Name(), ErrInvalidArgument, o.err)
	}
	if err := q.q.Err(); err != nil {
		return err
	}
	if err := q.q.Start(ctx); err != nil {
		return err
	}
	if o.limits.SetGroups {
		// Every process obeys them from now on, Receive calls too.
		if err := q.q.SetGroupLimits(ctx, o.limits.GroupConcurrency, o.limits.GroupInterval); err != nil {
			return fmt.Errorf("consume %s: %w", q.Name(), err)
		}
	}
	c := &consumer[T]{
		q: q, handler: handler, opts: o,
		held:      map[*Delivery[T]]context.CancelFunc{},
		quit:      make(chan struct{}),
		handlerBg: context.WithoutCancel(ctx),
	}
	return c.run(ctx)
}

type consumer[T any] struct {
	q         *Queue[T]
	handler   Handler[T]
	opts      consumeOptions
	handlerBg context.Context // ctx's values, not its cancellation

	quit chan struct{} // closed at shutdown: start no new handler

	mu sync.Mutex
	// held are the deliveries this Consume holds leases for: started
	// (with the cancel func of the handler's context) or leased ahead
	// (nil). Their leases are extended.
	held   map[*Delivery[T]]context.CancelFunc
	unused []*Delivery[T] // leased ahead, never handled: given back
}

func (c *consumer[T]) run(ctx context.Context) error {
	o := c.opts
	var background sync.WaitGroup
	stopExtending := make(chan struct{})
	background.Go(func() { c.extendLeases(stopExtending) })
	// Listed by inspect's Consumers while it runs, removed once its
	// handlers are done.
	presence, leave := context.WithCancel(context.WithoutCancel(ctx))
	defer leave()
	background.Go(func() { c.q.q.Present(presence, o.concurrency, c.inFlight) })

	// slots counts leased items: those being handled plus up to one
	// batch prefetched, so that the next receive is already under way
	// while handlers work; under a global concurrency limit, only those
	// being handled, one lease per receive (a lease ahead would hold a
	// share of the fleet's limit idle). work feeds a fixed pool of
	// handlers.
	slots := make(chan struct{}, numReceivers*o.concurrency)
	batch := o.concurrency
	if o.limits.Concurrency > 0 {
		slots, batch = make(chan struct{}, o.concurrency), 1
	}
	work := make(chan *Delivery[T], o.concurrency)
	var handlers sync.WaitGroup
	for range o.concurrency {
		handlers.Go(func() {
			for {
				select {
				case <-c.quit:
					return
				case d := <-work:
					select {
					case <-c.quit:
						c.giveBack(d)
						c.releaseUnused()
						return
					default:
					}
					if paused, _ := c.q.q.Paused(c.handlerBg); paused {
						// Leased ahead, then the queue was paused: it goes
						// back first in line, no attempt counted, and the
						// next receive waits for Resume.
						c.giveBack(d)
						c.releaseUnused()
						<-slots
						continue
					}
					if !c.awaitStart(d) {
						c.giveBack(d)
						c.releaseUnused()
						return
					}
					c.handle(d)
					<-slots
				}
			}
		})
	}

	var receivers sync.WaitGroup
	var fatal error
	var fatalOnce sync.Once
	rctx, stopReceiving := context.WithCancel(ctx)
	defer stopReceiving()
	gather := make(chan struct{}, 1) // held by the receiver gathering slots
	for range numReceivers {
		receivers.Go(func() {
			if err := c.receiveLoop(rctx, gather, slots, batch, work); err != nil {
				fatalOnce.Do(func() { fatal = err })
				stopReceiving()
			}
		})
	}
	receivers.Wait()

	// Shutdown. First, what no handler started goes back at once. The
	// handlers may take some of it meanwhile (and give it back
	// themselves, seeing quit closed): a receive here must not wait for
	// an item one of them took after the check.
	close(c.quit)
drain:
	for {
		select {
		case d := <-work:
			c.giveBack(d)
		default:
			break drain
		}
	}
	c.releaseUnused()
	// Then running handlers get the shutdown timeout.
	finished := make(chan struct{})
	go func() {
		handlers.Wait()
		close(finished)
	}()
	abandoned := c.awaitHandlers(finished)
	close(stopExtending)
	leave()
	background.Wait()
	if abandoned > 0 {
		c.q.q.Config().Logger.Error("redelay: handlers still running after their context was cancelled; Consume returns without them (their items were given back)",
			"queue", c.q.Name(), "handlers", abandoned)
	}
	if fatal != nil {
		return fatal
	}
	return fmt.Errorf("consume %s: %w", c.q.Name(), ctx.Err())
}

// inFlight is how many deliveries handlers hold now.
func (c *consumer[T]) inFlight() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cancel := range c.held {
		if cancel != nil {
			n++
		}
	}
	return n
}

// awaitHandlers waits for running handlers: up to the shutdown timeout,
// then cancels them, gives their items back, and waits handlerGrace more.
// It returns how many handlers it gave up on.
func (c *consumer[T]) awaitHandlers(finished <-chan struct{}) int {
	if d := c.opts.shutdownTimeout; d != 0 {
		var timeout <-chan time.Time
		if d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-finished:
			return 0
		case <-timeout:
		}
	}
	ds := c.stopRunning()
	if len(ds) > 0 {
		c.q.q.Config().Logger.Warn("redelay: shutdown timeout: handlers cancelled, their items given back",
			"queue", c.q.Name(), "items", len(ds), "timeout", c.opts.shutdownTimeout)
	}
	t := time.NewTimer(handlerGrace)
	defer t.Stop()
	select {
	case <-finished:
		return 0
	case <-t.C:
		c.mu.Lock()
		defer c.mu.Unlock()
		return len(c.held)
	}
}

// stopRunning cancels the running handlers' contexts and gives their items
// back to the head of the queue, no attempt counted.
func (c *consumer[T]) stopRunning() []*Delivery[T] {
	c.mu.Lock()
	var ds []*Delivery[T]
	for d, cancel := range c.held {
		// Given back first, cancelled second: a handler that returns at
		// once finds its delivery given back, and settles nothing.
		if d.l.MarkReleased() {
			ds = append(ds, d)
		}
		if cancel != nil {
			cancel()
		}
	}
	c.mu.Unlock()
	c.release(ds)
	return ds
}

// receiveLoop leases items into work until ctx ends; it returns an error
// only when the queue cannot be used at all (closed or invalid). gather
// (capacity 1) is held by the one receiver gathering slots.
func (c *consumer[T]) receiveLoop(ctx context.Context, gather, slots chan struct{}, batch int, work chan<- *Delivery[T]) error {
	failures := 0
	for ctx.Err() == nil {
		// Wait for a whole handler's worth of slots (those in use are freed
		// as running handlers finish), then lease them in one script call:
		// one batch is handled while the next is fetched. One receiver
		// gathers at a time (numReceivers); the other's slots are all in
		// its call, in work or in handlers, and are freed without it.
		select {
		case gather <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		free := 0
		for free < batch {
			select {
			case slots <- struct{}{}:
				free++
			case <-ctx.Done():
				for range free {
					<-slots
				}
				<-gather
				return nil
			}
		}
		<-gather
		ds, err := c.q.receive(ctx, queue.ReceiveRequest{Max: free, Backoff: c.backoff, Limits: c.opts.limits})
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
			wait := queue.BackoffOnError(failures)
			c.q.q.Config().Logger.Warn("redelay: receive failed; retrying", "queue", c.q.Name(), "err", err, "retry_in", wait)
			queue.Sleep(ctx, wait)
			continue
		}
		failures = 0
		for i, d := range ds {
			c.track(d)
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

func (c *consumer[T]) backoff(attempt int) time.Duration {
	return queue.SafeDelay(c.opts.backoff, attempt)
}

// track records a delivery leased ahead: its lease is extended.
func (c *consumer[T]) track(d *Delivery[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.held[d]; !ok {
		c.held[d] = nil
	}
}

// giveBack sets aside a delivery leased ahead that no handler will run.
func (c *consumer[T]) giveBack(d *Delivery[T]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.held, d)
	c.unused = append(c.unused, d)
}

// releaseUnused gives the deliveries set aside back to the head of the
// ready list, with no attempt counted.
func (c *consumer[T]) releaseUnused() {
	c.mu.Lock()
	ds := c.unused
	c.unused = nil
	c.mu.Unlock()
	for _, d := range ds {
		d.l.MarkReleased()
	}
	c.release(ds)
}

// awaitStart waits for d's start under the rate limit; false when Consume
// shuts down first.
func (c *consumer[T]) awaitStart(d *Delivery[T]) bool {
	wait := time.Until(d.l.Start())
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.quit:
		return false
	}
}

// freed wakes consumers waiting for n leases to end under the global
// concurrency limit.
func (c *consumer[T]) freed(n int) {
	c.q.q.Freed(c.handlerBg, n, c.opts.limits.Concurrency)
}

// release runs release.lua for ds. If that fails they come back anyway
// when their leases expire.
func (c *consumer[T]) release(ds []*Delivery[T]) {
	if len(ds) == 0 {
		return
	}
	defer c.freed(len(ds))
	c.q.q.Release(c.handlerBg, leases(ds))
}

// handle runs the handler and settles the delivery.
func (c *consumer[T]) handle(d *Delivery[T]) {
	hctx, cancel := context.WithCancel(c.handlerBg)
	if c.opts.handlerTimeout > 0 {
		hctx, cancel = context.WithTimeout(c.handlerBg, c.opts.handlerTimeout)
	}
	defer cancel()
	c.mu.Lock()
	c.held[d] = cancel
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.held, d)
		c.mu.Unlock()
	}()

	defer c.freed(1) // its lease ended (settled), or will (lost)
	pctx, op := c.q.q.Telemetry().StartProcess(hctx, d.ID, d.Attempt, d.Headers)
	err := c.call(pctx, d)
	c.q.q.Telemetry().Processed(pctx, op, cause(err))
	if d.l.Settled() {
		return // settled by the handler, or given back at shutdown
	}
	// The settlement's span is a child of the process span; its calls
	// outlive the handler's context.
	ctx := c.q.q.Telemetry().Within(c.handlerBg, op)
	var settleErr error
	var skip *skipRetry
	var after *retryAfter
	switch {
	case err == nil:
		settleErr = c.ack(ctx, d)
	case errors.As(err, &skip):
		settleErr = d.l.Nack(ctx, 0, skip.err.Error(), true)
	case errors.As(err, &after):
		settleErr = d.l.Nack(ctx, queue.SafeDelay(func(int) time.Duration { return after.d }, d.Attempt), after.err.Error(), false)
	default:
		settleErr = d.l.Nack(ctx, c.backoff(d.Attempt), err.Error(), false)
	}
	if settleErr == nil {
		return
	}
	log := c.q.q.Config().Logger.With("queue", c.q.Name(), "id", d.ID, "attempt", d.Attempt)
	if errors.Is(settleErr, ErrNotReplicated) {
		log.Warn("redelay: delivery settled on the master, not confirmed by replicas in time; after a failover it may be delivered again", "err", settleErr)
		return
	}
	if errors.Is(settleErr, ErrLeaseLost) {
		log.Warn("redelay: lease lost before the handler finished; the item may be delivered again", "handler_err", err)
		return
	}
	// The lease will expire and the item come back: at least once.
	log.Error("redelay: could not settle delivery; it will be redelivered after the visibility timeout", "err", settleErr, "handler_err", err)
}

// cause is a handler's error without the wrapper of SkipRetry or
// RetryAfter, which say what to do with it, not what failed.
func cause(err error) error {
	var skip *skipRetry
	var after *retryAfter
	switch {
	case errors.As(err, &skip):
		return skip.err
	case errors.As(err, &after):
		return after.err
	}
	return err
}

// ack acks d, in a span under ctx's. The acks of handlers that finish
// together go in one call of the ack script (the queue's ack batcher).
func (c *consumer[T]) ack(ctx context.Context, d *Delivery[T]) (err error) {
	ctx, op := c.q.q.Telemetry().StartSettle(ctx, telemetry.Ack, d.ID, d.Headers)
	defer func() { c.q.q.Telemetry().Settled(ctx, op, false, err) }()
	// Seen through whatever the handler's context does: the handler
	// succeeded, and the ack records it.
	return queue.AckAll(context.WithoutCancel(ctx), []*queue.Lease{d.l})[0]
}

// call calls the handler, turning a panic into an error.
func (c *consumer[T]) call(ctx context.Context, d *Delivery[T]) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("handler panic: %v", r)
			c.q.q.Config().Logger.Error("redelay: handler panicked", "queue", c.q.Name(), "id", d.ID,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	return c.handler(ctx, d)
}

// extendLeases keeps the leases this Consume holds alive: every third of
// the visibility timeout, one round trip for all of them.
func (c *consumer[T]) extendLeases(stop <-chan struct{}) {
	vis := c.q.q.Config().Visibility
	tick := time.NewTicker(max(vis/3, 5*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		c.mu.Lock()
		ds := make([]*Delivery[T], 0, len(c.held))
		for d := range c.held {
			if !d.l.Settled() {
				ds = append(ds, d)
			}
		}
		c.mu.Unlock()
		for len(ds) > 0 {
			n := min(len(ds), maxReceive)
			if err := queue.ExtendAll(c.handlerBg, vis, leases(ds[:n])); err != nil {
				c.q.q.Config().Logger.Warn("redelay: lease extension failed", "queue", c.q.Name(), "leases", n, "err", err)
			}
			ds = ds[n:]
		}
	}
}
