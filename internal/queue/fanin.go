package queue

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"
)

// claim is an item a waiter claimed (moved from ready to claimed) in part
// part at at.
type claim struct {
	part int
	raw  []byte
	at   time.Time
}

// fanIn lets callers wait on every part at once. A Cluster cannot block
// on keys of several slots in one command, so while at least one caller
// waits, one waiter goroutine per part blocks on its part's claimed list
// (the same BLMOVE a queue of one part uses) and hands what it claims to a
// waiting caller, which takes or leases it on that part. An item claimed
// when no caller wants it any more is given back. A waiter stops when its
// block ends and nobody waits (so a burst of short waits does not start
// and stop waiters), or when the queue closes.
type fanIn struct {
	parts  []*part
	claims chan claim // unbuffered: a claim is handed to a caller, or given back

	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // the waiters

	mu      sync.Mutex
	waiting int           // callers waiting
	idle    chan struct{} // closed while no caller waits
	running []bool        // by part: its waiter runs
}

func newFanIn(parts []*part) *fanIn {
	ctx, cancel := context.WithCancel(context.Background())
	idle := make(chan struct{})
	close(idle)
	return &fanIn{parts: parts, claims: make(chan claim), ctx: ctx, cancel: cancel, idle: idle, running: make([]bool, len(parts))}
}

// next waits for an item claimed in any part: ok is false when the
// deadline (if not zero) passed first.
func (f *fanIn) next(ctx context.Context, deadline time.Time) (c claim, ok bool, err error) {
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
func (f *fanIn) enter() error {
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

func (f *fanIn) leave() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.waiting--
	if f.waiting == 0 {
		close(f.idle)
	}
}

// wanted returns the channel closed when no caller waits any more; ok is
// false (and the waiter of part i is marked stopped) when none waits now.
func (f *fanIn) wanted(i int) (idle <-chan struct{}, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.waiting == 0 || f.ctx.Err() != nil {
		f.running[i] = false
		return nil, false
	}
	return f.idle, true
}

// stopped marks the waiter of part i stopped.
func (f *fanIn) stopped(i int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.running[i] = false
}

// wait is the waiter of part i.
func (f *fanIn) wait(i int) {
	p := f.parts[i]
	failures := 0
	for {
		idle, ok := f.wanted(i)
		if !ok {
			return
		}
		// Paused: claim nothing until Resume.
		if err := p.AwaitRunning(f.ctx); err != nil {
			f.stopped(i)
			return
		}
		raw, err := p.waitClaim(f.ctx)
		if err != nil {
			if f.ctx.Err() != nil || errors.Is(err, ErrClosed) || errors.Is(err, ErrInvalidQueue) {
				f.stopped(i)
				return
			}
			failures++
			wait := BackoffOnError(failures)
			p.Cfg.Logger.Warn("redelay: waiting on a partition failed; retrying",
				"queue", p.Name(), "partition", i, "err", err, "retry_in", wait)
			Sleep(f.ctx, wait)
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

// BackoffOnError is how long a loop waits before it tries again after
// failures Redis calls in a row: growing to 5 s, with jitter.
func BackoffOnError(failures int) time.Duration {
	d := min(time.Duration(min(failures, 50))*100*time.Millisecond*time.Duration(min(failures, 50)), 5*time.Second)
	return d/2 + rand.N(d/2+1)
}

// Sleep waits for d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
