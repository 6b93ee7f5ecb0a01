package queue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// Limits are the fleet-wide limits of a Consume (WithRateLimit,
// WithGlobalConcurrency), kept by the receive script.
type Limits = store.Limits

// MaxVisibility bounds a visibility timeout and a lease extension.
const MaxVisibility = 365 * 24 * time.Hour

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

// SafeDelay is backoff(attempt), with a negative or out-of-range result
// taken as 0: a user's backoff function must not break settling.
func SafeDelay(backoff func(int) time.Duration, attempt int) time.Duration {
	d := backoff(attempt)
	if CheckDelay("delay", d) != nil {
		return 0
	}
	return d
}

// Lease is an item leased to this process: its metadata and payload, and
// the state of the lease as this process knows it.
type Lease struct {
	ID         string
	Attempt    int // 1 on first delivery
	EnqueuedAt time.Time
	DueAt      time.Time
	Headers    map[string]string
	Priority   int
	Group      string // the group's key (WithGroup); "" for none
	Payload    []byte

	part  *part
	token string
	// start is when Consume may start handling it (the rate limit's slot);
	// zero: at once.
	start time.Time

	mu sync.Mutex
	// held is how long the lease surely lasts on the server's clock as
	// this process keeps it (part.now): the time just before the call that
	// leased or extended it was sent, plus its duration. Redis ends a lease
	// only after its deadline, so a lease found gone before held was
	// settled by an earlier send of the same settlement (go-redis resent it
	// after a lost reply): that is success.
	held  time.Time
	state leaseState
}

type leaseState int

const (
	leased   leaseState = iota
	settling            // an Ack or Nack of it in flight
	settled             // acked, nacked or dead-lettered by this process
	released            // given back by Consume (shutdown)
	lost                // found gone
)

// Start is when Consume may start handling the lease (the rate limit's
// slot); zero: at once.
func (l *Lease) Start() time.Time { return l.start }

// Msg is what the span of an operation on l needs of it.
func (l *Lease) Msg() telemetry.Msg {
	return telemetry.Msg{ID: l.ID, Attempt: l.Attempt, Due: l.DueAt, Headers: l.Headers}
}

// ReceiveRequest is what a Receive, ReceiveBatch or Consume asks for.
type ReceiveRequest struct {
	Max     int                     // at most this many leases (1..MaxBatch)
	Backoff func(int) time.Duration // the retry of items that fail to decode
	Limits  Limits                  // a Consume's fleet-wide limits (one part only)
	Span    bool                    // record the receive's span (Receive, ReceiveBatch)
	Batch   bool                    // the span is a batch receive's
}

// Receive waits until it can lease at least one item, and leases up to
// r.Max of one part in one script call. accept is given each lease; an
// error from it (the value cannot be decoded) fails the item as an
// attempt (see failReceived), and the lease is not returned. While r.Limits
// allow nothing, Receive waits (until the next start the rate limit
// allows, or for a lease to end) without polling.
func (q *Queue) Receive(ctx context.Context, r ReceiveRequest, accept func(*Lease) error) ([]*Lease, error) {
	if err := q.Start(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	n := min(r.Max, MaxBatch)
	ls, err := q.receive(ctx, n, r, accept)
	if err != nil {
		return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
	}
	switch {
	case r.Span && r.Batch:
		msgs := make([]telemetry.Msg, len(ls))
		for i, l := range ls {
			msgs[i] = l.Msg()
		}
		q.Telemetry().ReceivedBatch(ctx, start, msgs)
	case r.Span:
		q.Telemetry().Received(ctx, start, ls[0].Msg())
	}
	return ls, nil
}

func (q *Queue) receive(ctx context.Context, n int, r ReceiveRequest, accept func(*Lease) error) ([]*Lease, error) {
	var claimed []byte
	var from *part
	lease := true // lease what is ready first, then after each claim
	for {
		if claimed == nil {
			// Paused (Pause pauses every part): wait here, at no cost to
			// Redis, until resumed.
			if err := q.parts[0].AwaitRunning(ctx); err != nil {
				return nil, err
			}
		}
		if lease {
			var ls []*Lease
			var err error
			p := from
			if claimed != nil {
				ls, err = p.lease(ctx, n, claimed, r, accept)
			} else {
				ls, p, err = q.leaseEach(ctx, n, r, accept)
			}
			switch limited := asLimited(err); {
			case limited != nil:
				// The script gave the claimed item back, first in line.
				claimed, lease = nil, true
				if err := p.awaitLimit(ctx, limited); err != nil {
					return nil, err
				}
				continue
			case errors.Is(err, store.ErrPaused):
				// The script gave the claimed item back, first in line.
				p.SawPaused()
				claimed, lease = nil, true
				continue
			case err != nil:
				if claimed != nil {
					// The lease did not happen (a script that fails changes
					// nothing; a call given up on releases what it leased):
					// the claimed item goes back now, not after the
					// reclaimer's hold.
					c := claimed
					p.Background(func() { p.unclaimLate(c, nil) })
				}
				return nil, err
			case len(ls) > 0:
				return ls, nil
			}
		}
		var err error
		if len(q.parts) == 1 {
			from = q.parts[0]
			claimed, err = from.waitClaim(ctx)
		} else {
			var c claim
			c, _, err = q.fan.next(ctx, time.Time{})
			from, claimed = q.parts[c.part], c.raw
		}
		if err != nil {
			return nil, err
		}
		// A wait that ended empty found nothing ready: wait again, at no
		// cost to Redis.
		lease = claimed != nil
	}
}

// leaseEach leases up to n ready items of the first part, in turn, that
// has some. A part found paused is skipped (Pause pauses them all).
func (q *Queue) leaseEach(ctx context.Context, n int, r ReceiveRequest, accept func(*Lease) error) ([]*Lease, *part, error) {
	if len(q.parts) == 1 {
		ls, err := q.parts[0].lease(ctx, n, nil, r, accept)
		return ls, q.parts[0], err
	}
	first := q.firstPart()
	for j := range q.parts {
		p := q.parts[(first+j)%len(q.parts)]
		ls, err := p.lease(ctx, n, nil, r, accept)
		if errors.Is(err, store.ErrPaused) {
			p.SawPaused()
			continue
		}
		if err != nil || len(ls) > 0 {
			return ls, p, err
		}
	}
	return nil, q.parts[0], nil
}

// awaitLimit waits as a limit of receive.lua asks: for the rate limit's
// next start, or (one block at most) for a lease to end.
func (c *part) awaitLimit(ctx context.Context, l *store.Limited) error {
	if l.Full {
		block := c.Store.Client().Block(ctx)
		_, err := Wait(ctx, c, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, c.Store.WaitSlot(ctx, block)
		}, nil)
		return err
	}
	t := time.NewTimer(l.Wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.Closing():
		return ErrClosed
	}
}

// lease runs one receive script call; nil when nothing was ready. Each
// item leased is counted consumed. A plain lease of ready items (no claimed
// item, no limits) goes through c.leases: the receives of one part's
// concurrent callers share one call, each given its share of the items in
// the order the script leased them.
func (c *part) lease(ctx context.Context, n int, claimed []byte, r ReceiveRequest, accept func(*Lease) error) ([]*Lease, error) {
	if claimed == nil && r.Limits == (Limits{}) {
		if err := c.layout.check(ctx, &c.bg); err != nil {
			return nil, err
		}
		o, _, err := c.leases.do(ctx, n)
		if err != nil {
			return nil, err
		}
		return c.leased(ctx, o, r, accept), nil
	}
	vis := c.Cfg.Visibility
	prefix := NewToken()
	sent := c.now()
	res, err := Wait(ctx, c, func(ctx context.Context) ([]store.Leased, error) {
		return c.Store.Lease(ctx, vis, n, prefix, claimed, r.Limits)
	}, c.releaseLate)
	if err != nil {
		return nil, err
	}
	return c.leased(ctx, leaseOut{res: res, sent: sent}, r, accept), nil
}

// leaseOut is a caller's share of one receive script call, and when the
// call was sent (a lease is held for the visibility timeout from then).
type leaseOut struct {
	res  []store.Leased
	sent time.Time
}

// leaseCalls leases ready items for several callers (up to ns[i] each) in
// one receive script call.
func (c *part) leaseCalls(ctx context.Context, ns []int) ([]leaseOut, error) {
	sent := c.now()
	res, err := c.Store.Lease(ctx, c.Cfg.Visibility, sum(ns), NewToken(), nil, Limits{})
	if err != nil {
		return nil, err
	}
	shares := share(res, ns)
	out := make([]leaseOut, len(ns))
	for i, r := range shares {
		out[i] = leaseOut{res: r, sent: sent}
	}
	return out, nil
}

// leftLeases gives back the items leased for callers that stopped waiting
// while their receive was on its way.
func (c *part) leftLeases(outs []leaseOut) {
	var res []store.Leased
	for _, o := range outs {
		res = append(res, o.res...)
	}
	c.releaseLate(res, nil)
}

// leased turns a receive call's items into leases: items past their TTL
// and bytes that are no envelope were moved to the dead letters by the
// script; an item accept refuses is failed as an attempt.
func (c *part) leased(ctx context.Context, o leaseOut, r ReceiveRequest, accept func(*Lease) error) []*Lease {
	res := o.res
	held := o.sent.Add(c.Cfg.Visibility)
	replied := time.Now()
	ls := make([]*Lease, 0, len(res))
	for _, lr := range res {
		if lr.Expired {
			c.Tel.Expired(ctx, 1)
			c.Cfg.Logger.Debug("redelay: item past its TTL moved to the dead letters",
				"queue", c.Name(), "id", string(lr.Data))
			continue
		}
		if lr.Token == "" {
			c.Tel.DeadLettered(ctx, 1)
			c.Cfg.Logger.Warn("redelay: bytes that are no envelope moved to the dead letters",
				"queue", c.Name(), "reason", string(lr.Data), "dead_letter_list", c.Keys.DeadReady)
			continue
		}
		l, err := c.newLease(lr.Token, lr.Data, held)
		if err == nil {
			if aerr := accept(l); aerr != nil {
				err = DecodeError(c.Cfg.Codec, l.ID, aerr)
			}
		}
		if err != nil {
			c.failReceived(ctx, l, err, r.Backoff)
			continue
		}
		if lr.Start > 0 {
			l.start = replied.Add(lr.Start)
		}
		c.Tel.Consumed(ctx, l.DueAt)
		ls = append(ls, l)
	}
	return ls
}

// releaseLate gives back leases made after their caller left.
func (c *part) releaseLate(res []store.Leased, err error) {
	if err != nil {
		return
	}
	var tokens []string
	for _, r := range res {
		if r.Token != "" {
			tokens = append(tokens, r.Token)
		}
	}
	if len(tokens) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Store.Release(ctx, tokens); err != nil {
		c.Cfg.Logger.Warn("redelay: could not give back items leased after their caller left; they return after the visibility timeout",
			"queue", c.Name(), "items", len(tokens), "err", err)
	}
}

// newLease reads a leased envelope. On an error it still returns the lease
// (with its ID and attempt), to be failed.
func (c *part) newLease(token string, raw []byte, held time.Time) (*Lease, error) {
	l := &Lease{part: c, token: token, held: held}
	e, err := c.Decode(raw)
	if err != nil {
		l.ID, _ = envelope.PeekID(raw)
		l.Attempt = envelope.Attempt(raw) + 1
		return l, err
	}
	// A leased envelope counts the deliveries before this one.
	l.ID, l.Attempt, l.EnqueuedAt, l.DueAt, l.Priority = e.ID, e.Attempt+1, e.EnqueuedAt, e.DueAt, e.Priority()
	l.Group, _ = e.Group()
	l.Headers = maps.Clone(e.Headers)
	l.Payload = e.Payload
	return l, nil
}

// failReceived settles a leased item that cannot be decoded as a failed
// attempt: retried after the backoff, with the reason in its headers, and
// dead-lettered after the last attempt. A newer producer's envelope or a
// consumer of the wrong type then does not empty the queue into the dead
// letters; the error is logged.
func (c *part) failReceived(ctx context.Context, l *Lease, reason error, backoff func(int) time.Duration) {
	if backoff == nil {
		backoff = DefaultBackoff
	}
	log := c.Cfg.Logger.With("queue", c.Name(), "id", l.ID, "attempt", l.Attempt, "reason", reason.Error())
	outcome, maxAttempts, err := c.settle(context.WithoutCancel(ctx), store.Settle{
		Token: l.token, Reason: reason.Error(), Attempt: l.Attempt, Delay: SafeDelay(backoff, l.Attempt),
	})
	switch {
	case err != nil && !errors.Is(err, ErrNotReplicated):
		// The lease stays; it expires and the item comes back.
		log.Error("redelay: could not give back an item that could not be decoded; it returns after the visibility timeout", "err", err)
	case outcome == store.SettleDead:
		c.Tel.DeadLettered(ctx, 1)
		log.Warn("redelay: an item that could not be decoded was dead-lettered after its last attempt", "max_attempts", maxAttempts)
	case outcome != store.SettleLost:
		c.Tel.Nacked(ctx)
		log.Warn("redelay: an item that could not be decoded will be retried (is this consumer older than its producers, or of another type?)")
	}
}

// settle runs settle.lua with the queue's max attempts as the fallback.
func (c *part) settle(ctx context.Context, s store.Settle) (store.SettleOutcome, int64, error) {
	s.MaxAttempts = c.Cfg.MaxAttempts
	type result struct {
		outcome store.SettleOutcome
		max     int64
	}
	r, err := Call(ctx, c, func(ctx context.Context) (result, error) {
		o, max, err := c.Store.Settle(ctx, s)
		return result{o, max}, err
	}, nil)
	return r.outcome, r.max, err
}

// begin checks that the lease is still held by this process: it fails
// when this process already settled it, is settling it, gave it back, or
// found it gone. With settle, it marks the start of a settlement (Ack,
// Nack), so that a second one made meanwhile fails as one made after it
// would; end or abort closes it.
func (l *Lease) begin(op string, settle bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != leased {
		return fmt.Errorf("%s %s in %s: %w", op, l.ID, l.part.Name(), ErrLeaseLost)
	}
	if settle {
		l.state = settling
	}
	return nil
}

// abort closes a settlement whose call failed without an outcome: the
// lease is held again, and may be settled again.
func (l *Lease) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == settling {
		l.state = leased
	}
}

// end records a settlement's outcome. found is whether Redis still held
// the lease; when it did not but the lease surely had not expired, an
// earlier send of this settlement did it.
func (l *Lease) end(op string, found bool) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if found || l.part.now().Before(l.held) {
		l.state = settled
		return nil
	}
	l.state = lost
	return fmt.Errorf("%s %s in %s: %w", op, l.ID, l.part.Name(), ErrLeaseLost)
}

// Settled reports whether the lease is no longer held by this process.
func (l *Lease) Settled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.state != leased
}

// MarkReleased records that Consume gives the lease back (shutdown): a
// later Ack or Nack of it fails with ErrLeaseLost. It reports whether
// the lease was held.
func (l *Lease) MarkReleased() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == leased {
		l.state = released
		return true
	}
	return false
}

// Ack settles the lease done, in its own span.
func (l *Lease) Ack(ctx context.Context) error {
	tel := l.part.Tel
	ctx, op := tel.StartSettle(ctx, telemetry.Ack, l.ID, l.Headers)
	err := AckAll(ctx, []*Lease{l})[0]
	tel.Settled(ctx, op, false, err)
	return err
}

// AckAll acks leases, which may come from several parts: one round trip
// per part, all at once. It returns each one's result.
func AckAll(ctx context.Context, ls []*Lease) []error {
	errs := make([]error, len(ls))
	if onePart(ls) {
		ls[0].part.ackAll(ctx, ls, errs)
		return errs
	}
	groups := byPart(ls)
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() {
			subErrs := make([]error, len(g.idx))
			g.part.ackAll(ctx, g.ls, subErrs)
			for j, i := range g.idx {
				errs[i] = subErrs[j]
			}
		})
	}
	wg.Wait()
	return errs
}

// group is the leases of one part, and their indexes in a slice of leases.
type group struct {
	part *part
	idx  []int
	ls   []*Lease
}

// onePart reports whether every lease of ls (at least one) came from the
// same part: the common case, which needs no grouping.
func onePart(ls []*Lease) bool {
	for _, l := range ls {
		if l.part != ls[0].part {
			return false
		}
	}
	return len(ls) > 0
}

// asLimited returns the limit err reports, or nil. Only a failed call pays
// for the errors.As target.
func asLimited(err error) *store.Limited {
	if err == nil {
		return nil
	}
	var limited *store.Limited
	if errors.As(err, &limited) {
		return limited
	}
	return nil
}

// byPart groups leases by the part they came from, in order.
func byPart(ls []*Lease) []*group {
	var out []*group
	for i, l := range ls {
		var g *group
		for _, h := range out {
			if h.part == l.part {
				g = h
				break
			}
		}
		if g == nil {
			g = &group{part: l.part}
			out = append(out, g)
		}
		g.idx = append(g.idx, i)
		g.ls = append(g.ls, l)
	}
	return out
}

// ackAll acks leases of c, and sets each one's result. The acks of one
// part's concurrent callers (several consumers' Ack, Consume's handlers)
// go together, in one call of the ack script (c.acks): an ack is a few
// microseconds of the server's time, its call's fixed cost many more.
func (c *part) ackAll(ctx context.Context, ls []*Lease, errs []error) {
	live := make([]*Lease, 0, len(ls))
	idx := make([]int, 0, len(ls))
	for i, l := range ls {
		if errs[i] = l.begin("ack", true); errs[i] == nil {
			live = append(live, l)
			idx = append(idx, i)
		}
	}
	if len(live) == 0 {
		return
	}
	if err := c.layout.check(ctx, &c.bg); err != nil {
		for j, i := range idx {
			live[j].abort()
			errs[i] = fmt.Errorf("ack %s in %s: %w", live[j].ID, c.Name(), err)
		}
		return
	}
	out, sent, err := c.acks.do(ctx, live)
	for j, i := range idx {
		l := live[j]
		switch {
		case err == nil:
			errs[i] = out[j]
		case !sent || errors.Is(err, ctx.Err()):
			// Not sent, or given up on while on its way (its outcome is
			// recorded when the call returns): held as far as the caller
			// knows, and it may ack again.
			l.abort()
			errs[i] = fmt.Errorf("ack %s in %s: %w", l.ID, c.Name(), err)
		default:
			errs[i] = fmt.Errorf("ack %s in %s: %w", l.ID, c.Name(), err)
		}
	}
}

// leaseCount is the weight of an ack call's input: its lease count.
func leaseCount(ls []*Lease) int { return len(ls) }

// ackCalls acks the leases of several callers in one call of the ack
// script, records each lease's outcome (settled, lost, or held again when
// the call failed) and returns each caller's errors.
func (c *part) ackCalls(ctx context.Context, ins [][]*Lease) ([][]error, error) {
	var tokens []string
	for _, ls := range ins {
		for _, l := range ls {
			tokens = append(tokens, l.token)
		}
	}
	held, errs := c.Store.Ack(ctx, tokens)
	out := make([][]error, len(ins))
	acked, k := 0, 0
	for i, ls := range ins {
		out[i] = make([]error, len(ls))
		for j, l := range ls {
			h, err := held[k], errs[k]
			k++
			switch {
			case errors.Is(err, ErrNotReplicated):
				// Acked on the master; replicas did not confirm it.
				if out[i][j] = l.end("ack", h); out[i][j] == nil {
					acked++
					out[i][j] = fmt.Errorf("ack %s in %s: %w", l.ID, c.Name(), err)
				}
			case err != nil:
				l.abort()
				out[i][j] = fmt.Errorf("ack %s in %s: %w", l.ID, c.Name(), err)
			default:
				if out[i][j] = l.end("ack", h); out[i][j] == nil {
					acked++
				}
			}
		}
	}
	c.Tel.Acked(ctx, acked)
	return out, nil
}

// Nack settles a failed delivery, in its own span: a retry after delay,
// or the dead letters (dead, or the last attempt).
func (l *Lease) Nack(ctx context.Context, delay time.Duration, reason string, dead bool) error {
	how := telemetry.Nack
	if dead {
		how = telemetry.DeadLetter
	}
	tel := l.part.Tel
	ctx, op := tel.StartSettle(ctx, how, l.ID, l.Headers)
	outcome, err := l.settleFailed(ctx, delay, reason, dead)
	tel.Settled(ctx, op, outcome == store.SettleDead, err)
	return err
}

// settleFailed is Nack's work.
func (l *Lease) settleFailed(ctx context.Context, delay time.Duration, reason string, dead bool) (store.SettleOutcome, error) {
	if err := l.begin("nack", true); err != nil {
		return store.SettleLost, err
	}
	c := l.part
	outcome, maxAttempts, err := c.settle(ctx, store.Settle{
		Token: l.token, Reason: reason, Dead: dead, Delay: delay, Attempt: l.Attempt,
	})
	if err != nil && !errors.Is(err, ErrNotReplicated) {
		l.abort()
		return store.SettleLost, fmt.Errorf("nack %s in %s: %w", l.ID, c.Name(), err)
	}
	notReplicated := err // nil, or settled on the master without replicas' confirmation
	if err := l.end("nack", outcome != store.SettleLost); err != nil {
		return outcome, err
	}
	switch {
	case outcome == store.SettleDead:
		c.Tel.DeadLettered(ctx, 1)
		c.Cfg.Logger.Warn("redelay: item dead-lettered",
			"queue", c.Name(), "id", l.ID, "attempt", l.Attempt, "max_attempts", maxAttempts, "error", reason)
	case outcome != store.SettleLost:
		c.Tel.Nacked(ctx)
	}
	if notReplicated != nil {
		return outcome, fmt.Errorf("nack %s in %s: %w", l.ID, c.Name(), notReplicated)
	}
	return outcome, nil
}

// Extend keeps the lease for by more from now.
func (l *Lease) Extend(ctx context.Context, by time.Duration) error {
	if by <= 0 || by > MaxVisibility {
		return fmt.Errorf("extend %s in %s: duration %v out of range (0, 1 year]: %w", l.ID, l.part.Name(), by, ErrInvalidArgument)
	}
	if err := l.begin("extend", false); err != nil {
		return err
	}
	held, err := l.part.extend(ctx, by, []*Lease{l})
	if err != nil {
		return fmt.Errorf("extend %s in %s: %w", l.ID, l.part.Name(), err)
	}
	if !held[0] {
		return fmt.Errorf("extend %s in %s: %w", l.ID, l.part.Name(), ErrLeaseLost)
	}
	return nil
}

// ExtendAll extends leases that may come from several parts.
func ExtendAll(ctx context.Context, by time.Duration, ls []*Lease) error {
	var errs []error
	for _, g := range byPart(ls) {
		if _, err := g.part.extend(ctx, by, g.ls); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// extend extends the leases of ls in one call and returns which were still
// held; those that were not are marked lost.
func (c *part) extend(ctx context.Context, by time.Duration, ls []*Lease) ([]bool, error) {
	tokens := make([]string, len(ls))
	for i, l := range ls {
		tokens[i] = l.token
	}
	sent := c.now()
	held, err := Call(ctx, c, func(ctx context.Context) ([]bool, error) {
		return c.Store.Extend(ctx, by, tokens)
	}, nil)
	if err != nil {
		return nil, err
	}
	for i, l := range ls {
		l.mu.Lock()
		switch {
		case held[i]:
			l.held = sent.Add(by)
		case l.state == leased:
			l.state = lost
		}
		l.mu.Unlock()
	}
	return held, nil
}

// Release gives leases back at once (Consume's shutdown), one call per
// part; it logs what it could not give back.
func (q *Queue) Release(ctx context.Context, ls []*Lease) {
	for _, g := range byPart(ls) {
		tokens := make([]string, len(g.ls))
		for j, l := range g.ls {
			tokens[j] = l.token
		}
		_, err := Call(ctx, g.part, func(ctx context.Context) (int64, error) {
			return g.part.Store.Release(ctx, tokens)
		}, nil)
		if err != nil {
			q.Config().Logger.Warn("redelay: could not give items back; they return after the visibility timeout",
				"queue", q.Name(), "items", len(tokens), "err", err)
		}
	}
}

// Freed wakes consumers waiting for the global concurrency limit (of
// limit leases) after n leases ended.
func (q *Queue) Freed(ctx context.Context, n, limit int) {
	if limit == 0 || n == 0 {
		return
	}
	c := q.parts[0]
	_, err := Call(ctx, c, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.Store.FreeSlots(ctx, n, limit)
	}, nil)
	if err != nil {
		c.Cfg.Logger.Warn("redelay: could not wake consumers waiting for the global concurrency limit; they try again within a second",
			"queue", q.Name(), "err", err)
	}
}

// Queue is the name of the queue the lease is of.
func (l *Lease) Queue() string { return l.part.Name() }
