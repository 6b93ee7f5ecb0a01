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

// offerReq is one offer on its way to Redis.
type offerReq struct {
	ctx  context.Context
	item store.OfferItem
	done chan offerRes // capacity 1
}

type offerRes struct {
	status store.OfferStatus
	err    error
}

// combiner sends concurrent offers of one queue together. A caller queues
// its offer and wakes an idle sender, or, when none is idle and fewer than
// maxSending run, starts one; a sender sends every offer queued so far in
// one script call, hands each caller its outcome, goes on while offers are
// queued, then waits senderLinger for more before it ends. A lone caller's
// offer goes at once; under load, calls carry many offers and the server's
// fixed cost per call is shared. Callers wait for their outcome or their
// context, whichever comes first.
//
// A caller whose context cannot end, finding no sender at all (none has
// run for senderLinger) and nothing queued, sends its offer itself, as a
// sender in flight that others queue behind: it could not stop waiting
// anyway, and it saves the two goroutine hand-offs of a queued offer
// (0.74–0.98× a lone producer's time per offer, docs/benchmarks.md).
type combiner struct {
	mu      sync.Mutex
	queue   []*offerReq
	sending int // senders running, idle ones included
	// idle counts the senders waiting for work that no caller has woken
	// yet; a caller that wakes one decrements it and puts a token in
	// kick, which the first sender to look takes.
	idle int
	kick chan struct{} // capacity maxSending
	// sent is when the latest call went; recheck, when armed, looks again
	// at offers left queued behind calls in flight (see wake).
	sent    time.Time
	recheck *time.Timer
	armed   bool
}

// wake makes a sender take the queued offers: an idle one, or a new one
// when fewer than maxSending run (otherwise a busy one takes them when its
// call returns). cb.mu is held.
func (c *part) wake() {
	cb := &c.comb
	if cb.sending > cb.idle { // a call is in flight
		if wait := slowCall - time.Since(cb.sent); wait > 0 {
			// Its sender takes the queued offers when it returns; look
			// again if it has not by the time it counts as slow.
			if !cb.armed {
				cb.armed = true
				if cb.recheck == nil {
					cb.recheck = time.AfterFunc(wait, c.rewake)
				} else {
					cb.recheck.Reset(wait)
				}
			}
			return
		}
	}
	switch {
	case cb.idle > 0:
		cb.idle--
		cb.kick <- struct{}{} // never blocks: tokens ≤ senders ≤ capacity
	case cb.sending < maxSending:
		if cb.kick == nil {
			cb.kick = make(chan struct{}, maxSending)
		}
		cb.sending++
		c.bg.Go(c.send)
	default:
		return
	}
	// A sender is on its way: the next offer waits for it, not for a
	// call that ended long ago.
	cb.sent = time.Now()
}

// rewake is wake for offers still queued when the recheck timer fires.
func (c *part) rewake() {
	cb := &c.comb
	cb.mu.Lock()
	defer cb.mu.Unlock()
	cb.armed = false
	if len(cb.queue) > 0 {
		c.wake()
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
	cb := &c.comb
	cb.mu.Lock()
	if ctx.Done() == nil && cb.sending == 0 && len(cb.queue) == 0 {
		cb.sending++ // a sender in flight: concurrent offers queue behind it
		cb.sent = time.Now()
		cb.mu.Unlock()
		return c.sendOwn(ctx, item)
	}
	req := &offerReq{ctx: ctx, item: item, done: make(chan offerRes, 1)}
	cb.queue = append(cb.queue, req)
	c.wake()
	cb.mu.Unlock()
	select {
	case r := <-req.done:
		return r.status, c.full(r.status == store.OfferFull, r.err)
	case <-ctx.Done():
	}
	cb.mu.Lock()
	if i := slices.Index(cb.queue, req); i >= 0 {
		cb.queue = slices.Delete(cb.queue, i, i+1)
		cb.mu.Unlock()
		return 0, ctx.Err()
	}
	cb.mu.Unlock()
	select {
	case r := <-req.done: // it finished meanwhile
		return r.status, c.full(r.status == store.OfferFull, r.err)
	default:
		return 0, &OfferOutcomeUnknown{Err: ctx.Err()}
	}
}

// sendOwn sends a caller's offer from its own goroutine (see combiner),
// counted in cb.sending by the caller, and then hands the offers queued
// meanwhile to a sender.
func (c *part) sendOwn(ctx context.Context, item store.OfferItem) (store.OfferStatus, error) {
	lane, name, nonce := c.lanes.get()
	statuses, err := c.offerCall(ctx, name, nonce, []store.OfferItem{item})
	c.lanes.put(lane)
	cb := &c.comb
	cb.mu.Lock()
	cb.sending--
	if len(cb.queue) > 0 {
		c.wake()
	}
	cb.mu.Unlock()
	var st store.OfferStatus
	if statuses != nil {
		st = statuses[0]
	}
	return st, c.full(st == store.OfferFull, err)
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

// send sends queued offers until none is left and none comes for
// senderLinger, or the core is closed.
func (c *part) send() {
	lane, name, _ := c.lanes.get()
	defer c.lanes.put(lane)
	cb := &c.comb
	var linger *time.Timer
	defer func() {
		if linger != nil {
			linger.Stop()
		}
	}()
	var g gather
	for {
		cb.mu.Lock()
		if g.short(len(cb.queue)) {
			// The callers of the previous calls are likely on their way
			// back with their next offers: let them run, briefly.
			deadline := time.Now().Add(gatherWait)
			for g.short(len(cb.queue)) && time.Now().Before(deadline) {
				cb.mu.Unlock()
				runtime.Gosched()
				cb.mu.Lock()
			}
		}
		n := min(len(cb.queue), maxCombined)
		if n == 0 {
			cb.idle++
			cb.mu.Unlock()
			if linger == nil {
				linger = time.NewTimer(senderLinger)
			} else {
				linger.Reset(senderLinger)
			}
			select {
			case <-cb.kick: // a caller woke this sender (and counted it)
				continue
			case <-linger.C:
			case <-c.closing:
			}
			cb.mu.Lock()
			select {
			case <-cb.kick: // woken meanwhile: a caller counts on a sender
				cb.mu.Unlock()
				continue
			default:
			}
			cb.idle--
			cb.sending--
			cb.mu.Unlock()
			return
		}
		g.sent(n)
		batch := slices.Clone(cb.queue[:n])
		cb.queue = slices.Delete(cb.queue, 0, n)
		cb.sent = time.Now()
		cb.mu.Unlock()

		items := make([]store.OfferItem, n)
		for i, r := range batch {
			items[i] = r.item
		}
		// The first offer's context carries the trace (a client
		// instrumentation's span nests under the send span), not its
		// cancellation: the call is seen through, its outcome recorded.
		ctx := context.WithoutCancel(batch[0].ctx)
		statuses, err := c.offerCall(ctx, name, c.lanes.nextNonce(), items)
		for i, r := range batch {
			res := offerRes{err: err}
			if statuses != nil {
				res.status = statuses[i]
			}
			r.done <- res
		}
	}
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
