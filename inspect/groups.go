package inspect

import (
	"context"
	"fmt"
)

// Group is one group of a queue (blocking.WithGroup) and its counts.
type Group struct {
	Key      string // the group's key ("" for items offered without a group)
	Ready    int64  // ready to deliver
	InFlight int64  // leased, not yet settled
	Paused   bool   // PauseGroup
}

// Groups lists up to limit of the queue's groups that hold ready or
// in-flight items, from offset, largest (ready + in flight) first, as
// blocking.Queue.Groups does. Two round trips (the check that the queue
// exists, then one read-only script per partition).
func (in *Inspector) Groups(ctx context.Context, queue string, offset, limit int) ([]Group, error) {
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return nil, wrap("groups", queue, err)
	}
	gs, err := q.Groups(ctx, offset, limit)
	if err != nil {
		return nil, fmt.Errorf("groups %s: %w", queue, err)
	}
	out := make([]Group, len(gs))
	for i, g := range gs {
		out[i] = Group(g)
	}
	return out, nil
}

// PauseGroup stops every process from handing out the items of one group
// of the queue, as blocking.Queue.PauseGroup does; ResumeGroup undoes it.
func (in *Inspector) PauseGroup(ctx context.Context, queue, key string) error {
	return in.setGroupPaused(ctx, "pause group", queue, key, true)
}

// ResumeGroup undoes PauseGroup: the group takes its turn again at once.
func (in *Inspector) ResumeGroup(ctx context.Context, queue, key string) error {
	return in.setGroupPaused(ctx, "resume group", queue, key, false)
}

func (in *Inspector) setGroupPaused(ctx context.Context, op, queue, key string, paused bool) error {
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return wrap(op, queue, err)
	}
	if err := q.SetGroupPaused(ctx, key, paused); err != nil {
		return fmt.Errorf("%s %s: %w", op, queue, err)
	}
	return nil
}

// PurgeGroup drops the ready items of one group of the queue and returns
// how many, as blocking.Queue.PurgeGroup does.
func (in *Inspector) PurgeGroup(ctx context.Context, queue, key string) (int64, error) {
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return 0, wrap("purge group", queue, err)
	}
	n, err := q.PurgeGroup(ctx, key)
	if err != nil {
		return n, fmt.Errorf("purge group %s: %w", queue, err)
	}
	return n, nil
}
