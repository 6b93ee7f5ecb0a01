package queue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redelay/redelay/internal/store"
)

// maxCombined bounds how many concurrent offers one offer.lua call carries.
const maxCombined = 500

// One combined call of a queue is in flight at a time while calls return
// promptly: the offers made while a call is on its way all go in the next
// one (see gather), so 8 producers share the server's fixed cost per call
// (most of an offer's) nearly 8 ways; more calls in flight would carry
// fewer offers each and cost the server more per offer than the overlap
// of round trips saves (docs/decisions.md, "Offers"). A call that has been on
// its way for slowCall (a stalled connection, a slot on the move, a wait
// for replicas) no longer holds the others back: another sender starts,
// up to maxSending.
const (
	maxSending = 4
	slowCall   = 2 * time.Millisecond
)

// A sender whose calls carried several offers expects as many callers to
// come back: when fewer offers are queued than its target (the most a
// recent call carried), it yields to the other goroutines for up to
// gatherWait before the call, so that the offers of callers just handed
// their outcome go with it, instead of the first caller back taking a
// call of its own (docs/decisions.md, "Offers"). A lone producer never waits (its
// target is 1), and the target falls back after gatherDecay calls in a
// row carried fewer.
const (
	gatherWait  = 100 * time.Microsecond
	gatherDecay = 16
)

// gather is a sender's target for the offers of one call.
type gather struct {
	target int // the most offers a recent call carried
	below  int // calls in a row that carried fewer
}

// short tells whether queued offers are worth waiting for more.
func (g *gather) short(queued int) bool {
	return queued > 0 && queued < g.target
}

// sent records a call of n offers.
func (g *gather) sent(n int) {
	switch {
	case n >= g.target:
		g.target, g.below = n, 0
	case g.below+1 >= gatherDecay:
		g.target, g.below = n, 0
	default:
		g.below++
	}
}

// senderLinger is how long a sender with nothing to send waits for the
// next offer before it ends. A producer offering more often than that
// hands its offers to a running goroutine instead of starting one per
// offer (a new goroutine also grows its stack to the depth of a Redis
// call, every time); an idle queue keeps no goroutine for long.
const senderLinger = 100 * time.Millisecond

// lanes hands out lane names: an offer call records its outcome under its
// lane so that a second run of the same call changes nothing (offer.lua).
// A lane is held by one call at a time; the names are this core's random
// prefix and a small number, reused, so a producer has as many lane keys in
// Redis as it had calls in flight at once (each expires store.LaneTTL
// after its last use).
type lanes struct {
	mu     sync.Mutex
	prefix string
	names  []string // by lane number, built once
	free   []int
	nonce  uint64
}

// get returns a free lane and a nonce for one call on it.
func (l *lanes) get() (lane int, name, nonce string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prefix == "" {
		l.prefix = NewToken()
	}
	if n := len(l.free); n > 0 {
		lane = l.free[n-1]
		l.free = l.free[:n-1]
	} else {
		lane = len(l.names)
		l.names = append(l.names, l.prefix+"."+strconv.Itoa(lane))
	}
	l.nonce++
	return lane, l.names[lane], strconv.FormatUint(l.nonce, 36)
}

// nextNonce returns a new nonce for another call on a lane already held.
func (l *lanes) nextNonce() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nonce++
	return strconv.FormatUint(l.nonce, 36)
}

func (l *lanes) put(lane int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free = append(l.free, lane)
}

// sum is the total of ns: how many items callers asked one shared call
// for.
func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}

// share hands out the items of a shared call in order: up to ns[i] to
// caller i, the first callers first (later ones get fewer, or none, when
// the call got fewer than asked).
func share[T any](items []T, ns []int) [][]T {
	out := make([][]T, len(ns))
	k := 0
	for i, n := range ns {
		m := min(n, len(items)-k)
		out[i] = items[k : k+m : k+m]
		k += m
	}
	return out
}

// offerRes is one offer's outcome: its status, and with it an error
// wrapping ErrNotReplicated when replicas did not confirm the call.
type offerRes struct {
	status store.OfferStatus
	err    error
}

// batcher sends concurrent calls of one kind of a part together: offers,
// acks, receives. A caller queues its input and wakes an idle sender, or,
// when none is idle and fewer than maxSending run, starts one; a sender
// sends every input queued so far (up to max in weight) in one call,
// hands each caller its output, goes on while inputs are queued, then
// waits senderLinger for more before it ends. Under load, calls carry
// many inputs and the server's fixed cost per call is shared. Callers
// wait for their output, their context or stop, whichever comes first.
//
// With own, a caller that finds no call in flight and nothing queued
// sends its input itself, on its own goroutine, as a sender in flight
// that others queue behind: a lone producer's offer and a lone consumer's
// ack take no goroutine hand-off. Its context then does not stop the call
// (it runs to its reply or the client's read timeout, like a plain
// go-redis call; docs/decisions.md, "Offers").
type batcher[I, O any] struct {
	// call runs one call of ins and returns one output per input, or the
	// error of the whole call, which every caller of it gets.
	call func(ctx context.Context, ins []I) ([]O, error)
	// weight is how much of max an input takes; nil: 1 each.
	weight func(I) int
	max    int
	own    bool
	// left, if not nil, is given the outputs of callers that stopped
	// waiting while their input was on its way (leases to give back). It
	// runs on the sender's goroutine, after the outputs are handed out.
	left func([]O)
	// stop, when closed, ends the wait of queued callers (ErrClosed);
	// nil for calls that are seen through.
	stop    <-chan struct{}
	closing <-chan struct{} // ends idle senders
	bg      *store.Calls

	mu      sync.Mutex
	queue   []*pending[I, O]
	sending int // senders running, idle ones and a caller's own included
	// idle counts the senders waiting for work that no caller has woken
	// yet; a caller that wakes one decrements it and puts a token in
	// kick, which the first sender to look takes.
	idle int
	kick chan struct{} // capacity maxSending
	// sent is when the latest call went; recheck, when armed, looks again
	// at inputs left queued behind calls in flight (see wake).
	sent    time.Time
	recheck *time.Timer
	armed   bool
}

// pending is one caller's input on its way.
type pending[I, O any] struct {
	ctx  context.Context
	in   I
	done chan outcome[O] // capacity 1
	gone bool            // the caller stopped waiting after it was taken (under mu)
}

type outcome[O any] struct {
	out O
	err error
}

// initBatchers sets up the part's batchers: offers, acks, receives and
// takes.
func (c *part) initBatchers() {
	c.offers = batcher[store.OfferItem, offerRes]{call: c.offerCalls, max: maxCombined, own: true}
	c.offers.attach(c)
	c.acks = batcher[[]*Lease, []error]{call: c.ackCalls, weight: leaseCount, max: maxCombined, own: true}
	c.acks.attach(c)
	c.leases = batcher[int, leaseOut]{call: c.leaseCalls, weight: func(n int) int { return n }, max: MaxBatch, left: c.leftLeases, stop: c.closing}
	c.leases.attach(c)
	c.pops = batcher[int, [][]byte]{call: c.popCalls, weight: func(n int) int { return n }, max: MaxBatch, left: c.leftPops, stop: c.closing}
	c.pops.attach(c)
}

// attach ties b to c's lifetime.
func (b *batcher[I, O]) attach(c *part) {
	b.closing, b.bg = c.closing, &c.bg
}

// do sends in, alone or with others, and returns its output. sent tells
// whether it went to Redis: without, err is why not (ctx's error, or
// ErrClosed); with, err is the call's error, or why the caller stopped
// waiting while it was on its way (then its output goes to left).
func (b *batcher[I, O]) do(ctx context.Context, in I) (out O, sent bool, err error) {
	b.mu.Lock()
	if b.own && b.sending == 0 && len(b.queue) == 0 {
		b.sending++ // a sender in flight: concurrent calls queue behind it
		b.sent = time.Now()
		b.mu.Unlock()
		outs, err := b.call(context.WithoutCancel(ctx), []I{in})
		b.mu.Lock()
		b.sending--
		if len(b.queue) > 0 {
			b.wake()
		}
		b.mu.Unlock()
		if err != nil {
			return out, true, err
		}
		return outs[0], true, nil
	}
	p := &pending[I, O]{ctx: ctx, in: in, done: make(chan outcome[O], 1)}
	b.queue = append(b.queue, p)
	b.wake()
	b.mu.Unlock()
	var why error
	select {
	case r := <-p.done:
		return r.out, true, r.err
	case <-ctx.Done():
		why = ctx.Err()
	case <-b.stop:
		why = ErrClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.queue, p); i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
		return out, false, why
	}
	select {
	case r := <-p.done: // it finished meanwhile
		return r.out, true, r.err
	default:
	}
	p.gone = true
	return out, true, why
}

// wake makes a sender take the queued inputs: an idle one, or a new one
// when fewer than maxSending run (otherwise a busy one takes them when its
// call returns). b.mu is held.
func (b *batcher[I, O]) wake() {
	if b.sending > b.idle { // a call is in flight
		if wait := slowCall - time.Since(b.sent); wait > 0 {
			// Its sender takes the queued inputs when it returns; look
			// again if it has not by the time it counts as slow.
			if !b.armed {
				b.armed = true
				if b.recheck == nil {
					b.recheck = time.AfterFunc(wait, b.rewake)
				} else {
					b.recheck.Reset(wait)
				}
			}
			return
		}
	}
	switch {
	case b.idle > 0:
		b.idle--
		b.kick <- struct{}{} // never blocks: tokens ≤ senders ≤ capacity
	case b.sending < maxSending:
		if b.kick == nil {
			b.kick = make(chan struct{}, maxSending)
		}
		b.sending++
		b.bg.Go(b.send)
	default:
		return
	}
	// A sender is on its way: the next input waits for it, not for a
	// call that ended long ago.
	b.sent = time.Now()
}

// rewake is wake for inputs still queued when the recheck timer fires.
func (b *batcher[I, O]) rewake() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.armed = false
	if len(b.queue) > 0 {
		b.wake()
	}
}

// halt stops the recheck timer (Close): queued inputs go with the calls
// in flight.
func (b *batcher[I, O]) halt() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.recheck != nil {
		b.recheck.Stop()
		b.armed = false
	}
}

// take removes the next call's inputs from the queue: as many as fit in
// max, at least one. b.mu is held.
func (b *batcher[I, O]) take() []*pending[I, O] {
	n, w := 0, 0
	for n < len(b.queue) {
		x := 1
		if b.weight != nil {
			x = b.weight(b.queue[n].in)
		}
		if n > 0 && w+x > b.max {
			break
		}
		n, w = n+1, w+x
	}
	batch := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	return batch
}

// send sends queued inputs until none is left and none comes for
// senderLinger, or the part is closed.
func (b *batcher[I, O]) send() {
	var linger *time.Timer
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	var g gather
	for {
		b.mu.Lock()
		if g.short(len(b.queue)) {
			// The callers of the previous calls are likely on their way
			// back with their next inputs: let them run, briefly.
			deadline := time.Now().Add(gatherWait)
			for g.short(len(b.queue)) && time.Now().Before(deadline) {
				b.mu.Unlock()
				runtime.Gosched()
				b.mu.Lock()
			}
		}
		if len(b.queue) == 0 {
			b.idle++
			b.mu.Unlock()
			if linger == nil {
				linger = time.NewTimer(senderLinger)
			} else {
				linger.Reset(senderLinger)
			}
			select {
			case <-b.kick: // a caller woke this sender (and counted it)
				continue
			case <-linger.C:
			case <-b.closing:
			}
			b.mu.Lock()
			select {
			case <-b.kick: // woken meanwhile: a caller counts on a sender
				b.mu.Unlock()
				continue
			default:
			}
			b.idle--
			b.sending--
			b.mu.Unlock()
			return
		}
		batch := b.take()
		g.sent(len(batch))
		b.sent = time.Now()
		b.mu.Unlock()
		b.run(batch)
	}
}

// run makes one call of batch and hands each caller its outcome.
func (b *batcher[I, O]) run(batch []*pending[I, O]) {
	ins := make([]I, len(batch))
	for i, p := range batch {
		ins[i] = p.in
	}
	// The first caller's context carries the trace (a client
	// instrumentation's span nests under the call's), not its
	// cancellation: the call is seen through, its outcome handed out.
	outs, err := b.call(context.WithoutCancel(batch[0].ctx), ins)
	var left []O
	b.mu.Lock()
	for i, p := range batch {
		var r outcome[O]
		if err != nil {
			r.err = err
		} else {
			r.out = outs[i]
		}
		if p.gone {
			if err == nil && b.left != nil {
				left = append(left, r.out)
			}
			continue
		}
		p.done <- r // buffered: never blocks
	}
	b.mu.Unlock()
	if len(left) > 0 {
		b.left(left)
	}
}

// Offer sends one item, alone or with others, and returns its status
// (store.Offer*). An error that is an *OfferOutcomeUnknown means the offer
// was sent and may have been stored; one wrapping ErrNotReplicated comes
// with the status: the call ran on the master, and replicas did not
// confirm it; any other error (ctx ended before it was sent) means it was
// not.
func (c *part) Offer(ctx context.Context, item store.OfferItem) (store.OfferStatus, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := c.layout.check(ctx, &c.bg); err != nil {
		return 0, NotStored(err) // the offer was not sent
	}
	// After the call: its own round trip goes first, on the connection
	// the check then reuses.
	defer c.checkServer()
	r, sent, err := c.offers.do(ctx, item)
	switch {
	case err == nil:
		return r.status, c.full(r.status == store.OfferFull, r.err)
	case !sent:
		return 0, err
	case errors.Is(err, ctx.Err()):
		return 0, &OfferOutcomeUnknown{Err: err} // given up on while on its way
	default:
		return 0, err // OfferError: the call failed
	}
}

// offerCalls is one offer script call of items, on a lane of its own.
func (c *part) offerCalls(ctx context.Context, items []store.OfferItem) ([]offerRes, error) {
	lane, name, nonce := c.lanes.get()
	statuses, err := c.offerCall(ctx, name, nonce, items)
	c.lanes.put(lane)
	if statuses == nil {
		return nil, err
	}
	out := make([]offerRes, len(items))
	for i, st := range statuses {
		out[i] = offerRes{status: st, err: err}
	}
	return out, nil
}

// offerCall runs one offer script call of items. With statuses, err is nil
// or wraps ErrNotReplicated: the call ran. Without, err is an
// *OfferOutcomeUnknown: the call was sent and may have run (a reply lost,
// a copy still in the network; a copy arriving after the lane's next call
// is refused by the script).
func (c *part) offerCall(ctx context.Context, lane, nonce string, items []store.OfferItem) ([]store.OfferStatus, error) {
	statuses, err := c.Store.Offer(ctx, lane, nonce, c.Cfg.MaxSize, items)
	if err != nil && statuses == nil {
		err = OfferError(err)
	}
	return statuses, err
}

// OfferLane holds a lane for a caller that sends its own offer calls
// (OfferBatch): Call returns a fresh nonce for each call; Release returns
// the lane.
type OfferLane struct {
	c    *part
	lane int
	Name string
}

// Lane takes a lane for calls of the caller's own (OfferBatch, Upsert).
func (c *part) Lane() *OfferLane {
	lane, name, _ := c.lanes.get()
	return &OfferLane{c: c, lane: lane, Name: name}
}

// Nonce returns a nonce for one more call on the lane.
func (l *OfferLane) Nonce() string { return l.c.lanes.nextNonce() }

// Release returns the lane once its calls ended, and has the server
// checked (checkServer), as an offer does.
func (l *OfferLane) Release() {
	l.c.lanes.put(l.lane)
	l.c.checkServer()
}

// Upsert sends one offer under a duplicate mode (store.Upsert) in a call
// of its own: such offers are not combined, so that two of the same ID
// meet in Redis one after the other. Errors are as Offer's.
func (c *part) Upsert(ctx context.Context, item store.OfferItem, dup byte, us int64) (store.OfferStatus, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	l := c.Lane()
	nonce := l.Nonce()
	st, err := Call(ctx, c, func(ctx context.Context) (store.OfferStatus, error) {
		return c.Store.Upsert(ctx, l.Name, nonce, item, dup, us, c.Cfg.MaxSize)
	}, func(store.OfferStatus, error) { l.Release() })
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		// Given up on while on its way: the call goes on, and its late
		// handler releases the lane.
		return 0, &OfferOutcomeUnknown{Err: err}
	}
	l.Release()
	if errors.Is(err, ErrNotReplicated) {
		return st, err // it ran on the master
	}
	if err != nil {
		return 0, OfferError(err) // sent: it may have run, unless refused for memory
	}
	return st, c.full(st == store.UpsertFull, nil)
}

// full returns err, or the ErrQueueFull of an offer refused by the bound.
func (c *part) full(refused bool, err error) error {
	if refused && err == nil {
		return c.ErrFull()
	}
	return err
}

// ErrFull is the error of an offer the queue's bound refused.
func (c *part) ErrFull() error {
	if c.Partitions() > 1 {
		return fmt.Errorf("%w: the item's partition holds %d items pending and ready, its share of WithMaxSize(%d) over %d partitions; nothing was stored", ErrQueueFull, c.Cfg.MaxSize, c.bound, c.Partitions())
	}
	return fmt.Errorf("%w: %d items pending and ready, the most it holds (WithMaxSize); nothing was stored", ErrQueueFull, c.Cfg.MaxSize)
}
