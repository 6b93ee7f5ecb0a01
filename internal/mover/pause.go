package mover

import "sync"

// Pause is this process's view of a queue's pause flag (kept in the
// queue's meta hash, see internal/lua/pause.lua). The queue's worker keeps
// it current: from the 'pause' and 'resume' messages on the wake-up
// channel, at once, and from every transfer run (at least once per sweep
// interval), which covers messages lost while the subscription was down.
//
// A read of the flag (a transfer run, the first Paused) may reply after
// this process paused or resumed the queue, or heard that another did,
// with what the flag was before: such a reply is stale and is dropped
// (Read and Observed), or a transfer run in flight during a Pause would
// resume the queue for this process until the next run.
type Pause struct {
	mu      sync.Mutex
	known   bool
	paused  bool
	gen     uint64        // counts the records; a read begun before the latest is stale
	resumed chan struct{} // closed while not paused
}

func newPause() *Pause {
	ch := make(chan struct{})
	close(ch)
	return &Pause{resumed: ch}
}

// Set records the flag as this process set it, or as a notification or
// a script that found the queue paused told it.
func (p *Pause) Set(paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set(paused)
}

// Read starts a read of the flag from Redis: pass what it returns to
// Observed with the flag the read found.
func (p *Pause) Read() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gen
}

// Observed records the flag a read begun with Read found, unless the flag
// was recorded since the read began (the reply may predate that record).
// It returns the flag as recorded after it.
func (p *Pause) Observed(read uint64, paused bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if read == p.gen {
		p.set(paused)
	}
	return p.paused
}

func (p *Pause) set(paused bool) {
	p.gen++
	p.known = true
	if paused == p.paused {
		return
	}
	p.paused = paused
	if paused {
		p.resumed = make(chan struct{})
	} else {
		close(p.resumed)
	}
}

// State returns the flag, and whether it was read from Redis yet.
func (p *Pause) State() (paused, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused, p.known
}

// Resumed returns a channel that is closed once the queue is not paused
// (at once when it is not).
func (p *Pause) Resumed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resumed
}
