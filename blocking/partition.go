package blocking

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// A queue opened WithPartitions(n > 1) is n ordinary queues, one per
// partition, each over its own keys (keys.Queue.Partition) with its own
// transfer registration and reclaimer; the public methods route to them:
// by ID to the one partition the ID hashes to, aggregates to all of them,
// and consuming calls take from all of them in turn (docs/decisions.md,
// "Partitions").

// partition makes q a partitioned queue: q.core is partition 0's.
func (q *Queue[T]) partition() {
	parts := make([]*Queue[T], q.core.Partitions())
	parts[0] = &Queue[T]{core: q.core}
	for i := 1; i < len(parts); i++ {
		parts[i] = &Queue[T]{core: q.core.Partition(i)}
	}
	q.setParts(parts)
}

// setParts makes q the queue of these partitions (parts[0].core is
// q.core): its gauges report the queue's Stats, one script call per
// partition.
func (q *Queue[T]) setParts(parts []*Queue[T]) {
	q.parts = parts
	q.fan = newFanIn(parts)
	q.core.SetGauges(func(ctx context.Context) (telemetry.Reading, error) {
		s, err := q.statsParts(ctx)
		if err != nil {
			return telemetry.Reading{}, err
		}
		return telemetry.Reading{
			Delayed: s.Delayed, Retry: s.Retry, Ready: s.Ready, Inflight: s.Inflight, Dead: s.Dead,
			Paused: s.Paused, Latency: s.Latency,
		}, nil
	})
}

// route returns the partition that holds the item with this ID (q itself
// when the queue has one partition).
func (q *Queue[T]) route(id string) *Queue[T] {
	if q.parts == nil {
		return q
	}
	return q.parts[keys.PartitionOf(id, len(q.parts))]
}

// start starts this process's background work for every partition.
func (q *Queue[T]) start(ctx context.Context) error {
	if q.parts == nil {
		return q.core.StartBackground(ctx)
	}
	for _, p := range q.parts {
		if err := p.core.StartBackground(ctx); err != nil {
			return err
		}
	}
	return nil
}

// eachPart runs f on every partition at once (queue.EachPart).
func eachPart[T any](q *Queue[T], f func(i int, p *Queue[T]) error) error {
	return queue.EachPart(q.parts, f)
}

// sumParts adds up a count read from every partition.
func sumParts[T any](ctx context.Context, q *Queue[T], op string, f func(*Queue[T], context.Context) (int64, error)) (int64, error) {
	if err := q.core.CheckLayout(ctx); err != nil {
		return 0, fmt.Errorf("%s %s: %w", op, q.Name(), err)
	}
	counts := make([]int64, len(q.parts))
	err := eachPart(q, func(i int, p *Queue[T]) error {
		n, err := f(p, ctx)
		counts[i] = n
		return err
	})
	var total int64
	for _, n := range counts {
		total += n
	}
	return total, err
}

// firstPart returns where a probe of the partitions starts: the next
// partition on each call, so that none is always probed last.
func (q *Queue[T]) firstPart() int {
	return int(q.fan.rotate.Add(1) % uint32(len(q.parts)))
}

// takeParts is take for a partitioned queue: a non-blocking pop of each
// partition in turn, then a wait for an item claimed in any of them.
func (q *Queue[T]) takeParts(ctx context.Context, deadline time.Time) (T, bool, error) {
	var zero T
	if err := q.start(ctx); err != nil {
		return zero, false, err
	}
	start := time.Now()
	for {
		if err := q.awaitRunning(ctx, deadline); err != nil {
			if errors.Is(err, errPollTimeout) {
				return zero, false, nil
			}
			return zero, false, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		var raw []byte
		var from *Queue[T]
		var err error
		first := q.firstPart()
		for j := range q.parts {
			from = q.parts[(first+j)%len(q.parts)]
			if raw, err = from.pop(ctx); err != nil || raw != nil {
				break
			}
		}
		if err == nil && raw == nil {
			if !deadline.IsZero() && !time.Now().Before(deadline) {
				return zero, false, nil
			}
			var c claim
			var ok bool
			c, ok, err = q.fan.next(ctx, deadline)
			if err == nil && !ok {
				return zero, false, nil // the Poll's timeout
			}
			if err == nil {
				from = q.parts[c.part]
				raw, err = from.finishClaim(ctx, c.raw, c.at)
			}
		}
		if err != nil {
			return zero, false, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		if raw == nil {
			continue
		}
		if v, msg, ok := from.taken(ctx, raw); ok {
			q.core.Tel.Received(ctx, start, msg)
			return v, true, nil
		}
	}
}

// receiveParts is receive for a partitioned queue: a lease on each
// partition in turn (the first that has items ready leases up to max of
// them), then a wait for an item claimed in any partition, leased with
// up to max-1 more of that partition's ready items.
func (q *Queue[T]) receiveParts(ctx context.Context, max int, backoff func(int) time.Duration) ([]*Delivery[T], error) {
	if err := q.start(ctx); err != nil {
		return nil, err
	}
	n := min(max, maxReceive)
	for {
		// Paused (Pause pauses every partition): wait for Resume.
		if err := q.core.AwaitRunning(ctx); err != nil {
			return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
		}
		first := q.firstPart()
		for j := range q.parts {
			p := q.parts[(first+j)%len(q.parts)]
			ds, err := p.lease(ctx, n, nil, backoff, store.Limits{})
			if errors.Is(err, store.ErrPaused) {
				p.core.SawPaused()
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
			}
			if len(ds) > 0 {
				return ds, nil
			}
		}
		c, _, err := q.fan.next(ctx, time.Time{})
		if err != nil {
			return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
		}
		p := q.parts[c.part]
		ds, err := p.lease(ctx, n, c.raw, backoff, store.Limits{})
		if errors.Is(err, store.ErrPaused) {
			p.core.SawPaused() // the script gave the claimed item back
			continue
		}
		if err != nil {
			// As in receive: the lease did not happen, the claimed item
			// goes back now.
			p.core.Background(func() { p.unclaimLate(c.raw, nil) })
			return nil, fmt.Errorf("receive %s: %w", q.Name(), err)
		}
		if len(ds) > 0 {
			return ds, nil
		}
	}
}

// claim is an item a waiter claimed (moved from ready to claimed) in
// partition part at at.
type claim struct {
	part int
	raw  []byte
	at   time.Time
}

// fanIn lets callers wait on every partition at once. A Cluster cannot
// block on keys of several slots in one command, so while at least one
// caller waits, one waiter goroutine per partition blocks on its
// partition's claimed list (the same BLMOVE a queue of one partition
// uses) and hands what it claims to a waiting caller, which takes or
// leases it on that partition. An item claimed when no caller wants it
// any more is given back. A waiter stops when its block ends and nobody
// waits (so a burst of short waits does not start and stop waiters), or
// when the queue closes.
type fanIn[T any] struct {
	parts  []*Queue[T]
	claims chan claim // unbuffered: a claim is handed to a caller, or given back
	rotate atomic.Uint32

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the waiters

	mu      sync.Mutex
	waiting int           // callers waiting
	idle    chan struct{} // closed while no caller waits
	running []bool        // by partition: its waiter runs
}

func newFanIn[T any](parts []*Queue[T]) *fanIn[T] {
	ctx, cancel := context.WithCancel(context.Background())
	idle := make(chan struct{})
	close(idle)
	return &fanIn[T]{parts: parts, claims: make(chan claim), ctx: ctx, cancel: cancel, idle: idle, running: make([]bool, len(parts))}
}

// next waits for an item claimed in any partition: ok is false when the
// deadline (if not zero) passed first.
func (f *fanIn[T]) next(ctx context.Context, deadline time.Time) (c claim, ok bool, err error) {
	if err := f.enter(); err != nil {
		return c, false, err
	}
	defer f.leave()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case c = <-f.claims:
		return c, true, nil
	case <-timeout:
		return c, false, nil
	case <-ctx.Done():
		return c, false, ctx.Err()
	case <-f.ctx.Done():
		return c, false, ErrClosed
	}
}

// enter counts a waiting caller and starts the waiters that do not run.
func (f *fanIn[T]) enter() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ctx.Err() != nil {
		return ErrClosed
	}
	if f.waiting == 0 {
		f.idle = make(chan struct{})
	}
	f.waiting++
	for i, r := range f.running {
		if !r {
			f.running[i] = true
			f.wg.Go(func() { f.wait(i) })
		}
	}
	return nil
}

func (f *fanIn[T]) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiting--
	if f.waiting == 0 {
		close(f.idle)
	}
}

// wanted returns the channel closed when no caller waits any more; ok is
// false (and the waiter of partition i is marked stopped) when none
// waits now.
func (f *fanIn[T]) wanted(i int) (idle <-chan struct{}, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting == 0 || f.ctx.Err() != nil {
		f.running[i] = false
		return nil, false
	}
	return f.idle, true
}

// stopped marks the waiter of partition i stopped.
func (f *fanIn[T]) stopped(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[i] = false
}

// wait is the waiter of partition i.
func (f *fanIn[T]) wait(i int) {
	p := f.parts[i]
	failures := 0
	for {
		idle, ok := f.wanted(i)
		if !ok {
			return
		}
		// Paused: claim nothing until Resume.
		if err := p.core.AwaitRunning(f.ctx); err != nil {
			f.stopped(i)
			return
		}
		raw, err := queue.Wait(f.ctx, p.core, func(ctx context.Context) ([]byte, error) {
			return p.core.Store.WaitClaim(ctx, p.core.Store.Client().Block(ctx))
		}, p.unclaimLate)
		if err != nil {
			if f.ctx.Err() != nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidQueue) {
				f.stopped(i)
				return
			}
			failures++
			wait := backoffOnError(failures)
			p.core.Cfg.Logger.Warn("redelay: waiting on a partition failed; retrying",
				"queue", p.Name(), "partition", i, "err", err, "retry_in", wait)
			sleep(f.ctx, wait)
			continue
		}
		failures = 0
		if raw == nil {
			continue // the block ended empty
		}
		select {
		case f.claims <- claim{part: i, raw: raw, at: time.Now()}:
		case <-idle:
			p.unclaimLate(raw, nil) // nobody wants it any more: first in line again
		case <-f.ctx.Done():
			p.unclaimLate(raw, nil)
			f.stopped(i)
			return
		}
	}
}

// closeParts closes every partition at once (each waits up to about a
// second for its calls in flight), then waits for the waiters.
func (q *Queue[T]) closeParts() error {
	q.fan.cancel()
	err := eachPart(q, func(_ int, p *Queue[T]) error { return p.Close() })
	q.fan.wg.Wait()
	q.deadMu.Lock()
	dead := q.dead
	q.deadMu.Unlock()
	if dead != nil {
		_ = dead.Close()
	}
	return err
}

// byPart groups deliveries by the partition they came from, in order.
func byPart[T any](ds []*Delivery[T]) (parts []*Queue[T], groups [][]int) {
	at := map[*Queue[T]]int{}
	for i, d := range ds {
		g, ok := at[d.q]
		if !ok {
			g = len(parts)
			at[d.q] = g
			parts = append(parts, d.q)
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return parts, groups
}

// ackAny acks deliveries that may come from several partitions: one
// round trip per partition, all at once.
func (q *Queue[T]) ackAny(ctx context.Context, ds []*Delivery[T]) []error {
	if q.parts == nil {
		return q.ackAll(ctx, ds)
	}
	errs := make([]error, len(ds))
	parts, groups := byPart(ds)
	var wg sync.WaitGroup
	for g, p := range parts { // the partitions at once: one round trip of latency
		wg.Go(func() {
			sub := make([]*Delivery[T], len(groups[g]))
			for j, i := range groups[g] {
				sub[j] = ds[i]
			}
			for j, err := range p.ackAll(ctx, sub) {
				errs[groups[g][j]] = err
			}
		})
	}
	wg.Wait()
	return errs
}

// extendAny extends leases that may come from several partitions.
func (q *Queue[T]) extendAny(ctx context.Context, by time.Duration, ds []*Delivery[T]) error {
	if q.parts == nil {
		_, err := q.extend(ctx, by, ds)
		return err
	}
	var errs []error
	parts, groups := byPart(ds)
	for g, p := range parts {
		sub := make([]*Delivery[T], len(groups[g]))
		for j, i := range groups[g] {
			sub[j] = ds[i]
		}
		if _, err := p.extend(ctx, by, sub); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// tokensByPart groups the lease tokens of ds by partition.
func tokensByPart[T any](ds []*Delivery[T]) map[*Queue[T]][]string {
	out := map[*Queue[T]][]string{}
	for _, d := range ds {
		out[d.q] = append(out[d.q], d.token)
	}
	return out
}

// deadParts returns the dead letters of a partitioned queue: a
// partitioned queue over each partition's dead letters.
func (q *Queue[T]) deadParts() *Queue[T] {
	parts := make([]*Queue[T], len(q.parts))
	for i, p := range q.parts {
		parts[i] = p.DeadLetters()
	}
	d := &Queue[T]{core: parts[0].core}
	d.setParts(parts)
	if q.core.Err() != nil {
		d.fan.cancel()
	}
	return d
}

// statsParts sums the partitions' stats: the latency is the largest, the
// next due time the earliest.
func (q *Queue[T]) statsParts(ctx context.Context) (Stats, error) {
	if err := q.core.CheckLayout(ctx); err != nil {
		return Stats{}, fmt.Errorf("stats %s: %w", q.Name(), err)
	}
	all := make([]Stats, len(q.parts))
	if err := eachPart(q, func(i int, p *Queue[T]) (err error) {
		all[i], err = p.Stats(ctx)
		return err
	}); err != nil {
		return Stats{}, err
	}
	s := Stats{Eviction: all[0].Eviction} // one client: one policy
	for _, st := range all {
		s.Delayed += st.Delayed
		s.Retry += st.Retry
		s.Ready += st.Ready
		s.Inflight += st.Inflight
		s.Dead += st.Dead
		s.Paused = s.Paused || st.Paused
		s.Latency = max(s.Latency, st.Latency)
		if !st.NextDue.IsZero() && (s.NextDue.IsZero() || st.NextDue.Before(s.NextDue)) {
			s.NextDue = st.NextDue
		}
	}
	return s, nil
}

// peekParts reads up to n ready items of every partition and returns the
// n that come first by priority, then due time: the order in which a
// single consumer would most likely get them (each partition hands out
// its own items in exactly that order).
func (q *Queue[T]) peekParts(ctx context.Context, n int) ([]Item[T], error) {
	if err := q.core.CheckLayout(ctx); err != nil {
		return nil, fmt.Errorf("peek %s: %w", q.Name(), err)
	}
	all := make([][]Item[T], len(q.parts))
	if err := eachPart(q, func(i int, p *Queue[T]) (err error) {
		all[i], err = p.Peek(ctx, n)
		return err
	}); err != nil {
		return nil, err
	}
	var out []Item[T]
	for _, items := range all {
		out = append(out, items...)
	}
	slices.SortStableFunc(out, func(a, b Item[T]) int {
		if a.Priority != b.Priority {
			return b.Priority - a.Priority
		}
		return a.DueAt.Compare(b.DueAt)
	})
	return out[:min(n, len(out))], nil
}

// setPausedParts pauses or resumes every partition.
func (q *Queue[T]) setPausedParts(ctx context.Context, paused bool) error {
	if err := q.core.CheckLayout(ctx); err != nil {
		return err
	}
	return eachPart(q, func(_ int, p *Queue[T]) error { return p.core.SetPaused(ctx, paused) })
}

// takeBatchParts is TakeBatch for a partitioned queue: up to max items
// of one partition, the first in turn that has some ready, or the one
// where a waiter claimed an item.
func (q *Queue[T]) takeBatchParts(ctx context.Context, max int) ([]T, error) {
	if err := q.start(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	for {
		if err := q.awaitRunning(ctx, time.Time{}); err != nil {
			return nil, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		var raws [][]byte
		var from *Queue[T]
		var err error
		first := q.firstPart()
		for j := range q.parts {
			from = q.parts[(first+j)%len(q.parts)]
			if raws, err = from.popN(ctx, max); err != nil || len(raws) > 0 {
				break
			}
		}
		if err == nil && len(raws) == 0 {
			var c claim
			if c, _, err = q.fan.next(ctx, time.Time{}); err == nil {
				from = q.parts[c.part]
				var raw []byte
				if raw, err = from.finishClaim(ctx, c.raw, c.at); err == nil && raw != nil {
					raws = [][]byte{raw}
					if max > 1 {
						if more, perr := from.popN(ctx, max-1); perr == nil {
							raws = append(raws, more...)
						}
					}
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		var out []T
		var msgs []telemetry.Msg
		for _, raw := range raws {
			if v, msg, ok := from.taken(ctx, raw); ok {
				out = append(out, v)
				msgs = append(msgs, msg)
			}
		}
		if len(out) > 0 {
			q.core.Tel.ReceivedBatch(ctx, start, msgs)
			return out, nil
		}
	}
}

// redriveParts is Redrive for a partitioned queue: each partition's dead
// letters go back to that partition, partition after partition.
func (q *Queue[T]) redriveParts(ctx context.Context, max int) (int, error) {
	total := 0
	for _, p := range q.parts {
		want := 0 // all
		if max > 0 {
			if want = max - total; want <= 0 {
				break
			}
		}
		n, err := p.Redrive(ctx, want)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
