package mover

import "sync"

// Pause is this process's view of a queue's pause flag (kept in the
// queue's meta hash, see internal/lua/pause.lua). The queue's worker keeps
// it current: from the 'pause' and 'resume' messages on the wake-up
// channel, at once, and from every transfer run (at least once per sweep
// interval), which covers messages lost while the subscription was down.
type Pause struct {
	mu      sync.Mutex
	known   bool
	paused  bool
	resumed chan struct{} // closed while not paused
}

func newPause() *Pause {
	ch := make(chan struct{})
	close(ch)
	return &Pause{resumed: ch}
}

// Set records the flag as read from Redis.
func (p *Pause) Set(paused bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
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
