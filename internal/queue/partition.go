package queue

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/store"
)

// layout checks, once per process, that the number of partitions this
// process opened the queue with is the one recorded in Redis (and records
// it when none is). It is shared by the parts of every partition of one
// queue and of their dead letters.
type layout struct {
	n    int
	meta *store.Partition // partition 0
	done atomic.Bool      // checked: err holds the outcome
	mu   sync.Mutex
	err  error
}

// check runs the check the first time it is called (and again after a
// failed round trip); later calls cost an atomic load. Calls that start
// together each read (so that each gives up when its own ctx ends); the
// first reply settles it.
func (l *layout) check(ctx context.Context, bg *store.Calls) error {
	if l == nil {
		return nil
	}
	if l.done.Load() {
		return l.err
	}
	got, err := store.Await(ctx, nil, bg, func(ctx context.Context) (int, error) {
		return l.meta.Partitions(ctx, l.n)
	}, nil)
	if err != nil {
		return fmt.Errorf("read the number of partitions: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done.Load() {
		return l.err
	}
	return l.settle(got)
}

// settle records the number of partitions read from Redis, and returns
// the error every call returns from then on if it is not the one this
// process opened the queue with.
func (l *layout) settle(got int) error {
	if got != l.n {
		l.err = &LayoutError{Queue: l.meta.K.Name, Recorded: got, Opened: l.n}
	}
	l.done.Store(true)
	return l.err
}

// Stats reads the queue's stats in one round trip, the check of its
// number of partitions included when it is due.
func (c *part) Stats(ctx context.Context) (store.Stats, error) {
	if c.layout == nil || c.layout.done.Load() {
		return Call(ctx, c, c.Store.Stats, nil)
	}
	type result struct {
		st store.Stats
		n  int
	}
	r, err := store.Await(ctx, nil, &c.bg, func(ctx context.Context) (result, error) {
		st, n, err := c.Store.StatsPartitions(ctx, c.layout.meta, c.layout.n)
		return result{st, n}, err
	}, nil)
	if err != nil {
		return store.Stats{}, err
	}
	c.layout.mu.Lock()
	defer c.layout.mu.Unlock()
	if !c.layout.done.Load() {
		c.layout.settle(r.n)
	}
	if err := c.layout.err; err != nil {
		return store.Stats{}, err
	}
	return r.st, nil
}

// failed returns the check's error once it is known.
func (l *layout) failed() error {
	if l == nil || !l.done.Load() {
		return nil
	}
	return l.err
}

// Partitions is the number of partitions the queue was opened with.
func (c *part) Partitions() int {
	if c.layout == nil {
		return 1
	}
	return c.layout.n
}

// Partition returns the part of partition i (1..Partitions()-1) of the
// queue whose partition 0 is c: the same settings over the keys of
// partition i. Partitions other than 0 do not announce the queue, and
// report no gauges of their own (partition 0 reports the queue's, see
// assemble).
func (c *part) Partition(i int) *part { return c.sibling(c.Keys.Partition(i)) }

// checkPartitions validates a number of partitions.
func checkPartitions(n int) error {
	if n < 1 || n > keys.MaxPartitions {
		return fmt.Errorf("WithPartitions(%d): must be 1..%d", n, keys.MaxPartitions)
	}
	return nil
}
