package delayed

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
)

// maxCombined bounds how many concurrent offers one offer.lua call carries.
const maxCombined = 500

// maxSending is how many combined calls of one queue may be in flight at
// once: with one, producers would wait for each other's round trips; with
// a few, Redis works on one call while the next is on its way.
const maxSending = 4

// offerReq is one Offer or OfferAt on its way to Redis.
type offerReq struct {
	id   string
	env  []byte
	mode string // "d" (delay) or "a" (at)
	us   int64  // delay or due time, µs
	done chan offerRes
}

// offerRes is what a waiting offer is told: its outcome, or that it is now
// the one to send the queued offers.
type offerRes struct {
	status int64
	err    error
	lead   bool
}

// combiner sends concurrent offers of one queue together. There is no
// goroutine of its own: a caller that finds fewer than maxSending calls in
// flight leads: it sends every offer queued so far (its own first) in one
// script call, hands each caller its outcome, and passes its lead to the
// oldest offer queued meanwhile. A lone caller leads at once, so serial
// offers pay nothing but a mutex; under load, calls carry many offers and
// the server's fixed cost per call is shared.
type combiner struct {
	mu      sync.Mutex
	queue   []*offerReq
	sending int // leads held (calls in flight, or about to be)
}

// combineOffer sends req, alone or with others, and returns its status.
// Once req has left the queue, ctx no longer applies: the script call
// finishes (it is short and bounded by the client's timeouts), so the
// outcome is never unknown. Before that, a done ctx withdraws req.
func (d *Queue[T]) combineOffer(ctx context.Context, req *offerReq) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c := &d.comb
	leadHanded := false
	c.mu.Lock()
	if c.sending >= maxSending {
		req.done = make(chan offerRes, 1)
		c.queue = append(c.queue, req)
		c.mu.Unlock()
		var r offerRes
		select {
		case r = <-req.done:
		case <-ctx.Done():
			c.mu.Lock()
			if i := slices.Index(c.queue, req); i >= 0 {
				c.queue = slices.Delete(c.queue, i, i+1)
				c.mu.Unlock()
				return 0, ctx.Err()
			}
			c.mu.Unlock()
			r = <-req.done // taken into a call, or handed the lead: see it through
		}
		if !r.lead {
			return r.status, r.err
		}
		leadHanded = true
		c.mu.Lock()
	}
	// A lead: req is in no queue (never queued, or taken out with the
	// lead), and it is the oldest offer waiting.
	if !leadHanded {
		c.sending++
	}
	n := min(len(c.queue), maxCombined-1)
	batch := make([]*offerReq, 0, n+1)
	batch = append(append(batch, req), c.queue[:n]...)
	c.queue = slices.Delete(c.queue, 0, n)
	c.mu.Unlock()

	statuses, err := d.sendOffers(context.WithoutCancel(ctx), batch)
	for i, r := range batch[1:] {
		res := offerRes{err: err}
		if err == nil {
			res.status = statuses[i+1]
		}
		r.done <- res
	}

	c.mu.Lock()
	if len(c.queue) > 0 {
		// The oldest waiting offer leads next. It leaves the queue with the
		// lead, so a withdrawal cannot drop the lead: it sees it through.
		next := c.queue[0]
		c.queue = slices.Delete(c.queue, 0, 1)
		next.done <- offerRes{lead: true}
	} else {
		c.sending--
	}
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return statuses[0], nil
}

// sendOffers runs offer.lua once for the offers in reqs and returns one
// status per offer.
func (d *Queue[T]) sendOffers(ctx context.Context, reqs []*offerReq) ([]int64, error) {
	k := d.core.Keys
	argv := make([]any, 1, 1+4*len(reqs))
	argv[0] = k.Wake
	for _, r := range reqs {
		argv = append(argv, r.id, r.env, r.mode, r.us)
	}
	res, err := lua.Offer.Run(ctx, d.core.RDB, d.offerKeys(), argv...).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("offer %s: %w", k.Name, err)
	}
	if len(res) != len(reqs) {
		return nil, fmt.Errorf("offer %s: %d statuses for %d offers", k.Name, len(res), len(reqs))
	}
	return res, nil
}

// offerKeys are offer.lua's KEYS.
func (d *Queue[T]) offerKeys() []string {
	k := d.core.Keys
	return []string{k.Delayed, k.Items, k.Seq, k.Ready}
}

// evalOffers queues one offer.lua call on pipe.
func (d *Queue[T]) evalOffers(ctx context.Context, pipe redis.Pipeliner, argv []any) *redis.Cmd {
	return lua.Offer.EvalSha(ctx, pipe, d.offerKeys(), argv...)
}
