package queue

import (
	"context"

	"github.com/redelay/redelay/internal/mover"
)

// pause returns this process's view of the queue's pause flag: the one
// of the worker that transfers the queue through this client, nil when
// none does (StartBackground starts one). Another handle of the queue may
// have started it: a Pause through this handle updates what that one sees.
func (c *part) pause() *mover.Pause {
	c.mu.Lock()
	reg := c.reg
	c.mu.Unlock()
	if reg != nil {
		return reg.Pause()
	}
	return mover.PauseOf(c.Store)
}

// Paused reports whether this process sees the queue paused. The first
// call reads the flag from Redis; later ones use what the queue's transfer
// learns (at once from the pause and resume notifications, and from every
// transfer run).
func (c *part) Paused(ctx context.Context) (bool, error) {
	p := c.pause()
	if p == nil {
		return false, nil
	}
	paused, known := p.State()
	if known {
		return paused, nil
	}
	read := p.Read()
	v, err := Call(ctx, c, c.Store.Paused, nil)
	if err != nil {
		return false, err
	}
	return p.Observed(read, v), nil
}

// SawPaused records that a script found the queue paused.
func (c *part) SawPaused() {
	if p := c.pause(); p != nil {
		p.Set(true)
	}
}

// AwaitRunning returns at once while the queue is not paused; while it is,
// it waits until it is resumed, ctx ends (ctx.Err()) or the queue closes
// (ErrClosed).
func (c *part) AwaitRunning(ctx context.Context) error {
	paused, err := c.Paused(ctx)
	if err != nil || !paused {
		return err
	}
	p := c.pause()
	logged := false
	for {
		paused, _ = p.State()
		if !paused {
			return nil
		}
		if !logged {
			c.Cfg.Logger.Debug("redelay: queue paused; waiting for Resume", "queue", c.Name())
			logged = true
		}
		select {
		case <-p.Resumed():
		case <-ctx.Done():
			return ctx.Err()
		case <-c.closing:
			return ErrClosed
		}
	}
}

// SetPaused pauses or resumes the queue for every process.
func (c *part) SetPaused(ctx context.Context, paused bool) error {
	if err := c.Err(); err != nil {
		return err
	}
	_, err := Call(ctx, c, func(ctx context.Context) (bool, error) {
		return c.Store.SetPaused(ctx, paused)
	}, nil)
	if err != nil {
		return err
	}
	if p := c.pause(); p != nil {
		p.Set(paused) // this process knows at once, notification or not
	}
	return nil
}
