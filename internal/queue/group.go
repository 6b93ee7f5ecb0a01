package queue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/store"
)

// Group is one group's counts (blocking.GroupInfo).
type Group = store.Group

// routeGroup returns the part that holds group g: its key's partition, so
// that every item of a group, and its limits, live in one part.
func (q *Queue) routeGroup(g string) *part {
	if len(q.parts) == 1 {
		return q.parts[0]
	}
	return q.parts[keys.PartitionOf(g, len(q.parts))]
}

// routeOffer returns the part an offer goes to: its group's, when it has
// one, else its ID's.
func (q *Queue) routeOffer(id string, r *OfferRequest) *part {
	if r.HasGroup {
		return q.routeGroup(r.Group)
	}
	return q.route(id)
}

// lookIn returns the parts to look in for item id: its ID's part first,
// then, on a queue of several parts, the others: an item of a group lives
// in its group's part (routeOffer), which a caller-chosen ID need not map
// to. A hit in the ID's part costs what it did without groups.
func (q *Queue) lookIn(id string) []*part {
	first := q.route(id)
	if len(q.parts) == 1 {
		return q.parts
	}
	out := make([]*part, 0, len(q.parts))
	out = append(out, first)
	for _, p := range q.parts {
		if p != first {
			out = append(out, p)
		}
	}
	return out
}

// idIn returns a new random ID that routes to part p of n (keys.PartitionOf):
// an item of a group gets one in its group's part, so that operations by
// ID find it at the first look. n tries on average.
func idIn(p, n int) string {
	for {
		if id := NewID(); keys.PartitionOf(id, n) == p {
			return id
		}
	}
}

// Groups lists up to limit groups from offset, largest (ready + in flight)
// first, across every part.
func (q *Queue) Groups(ctx context.Context, offset, limit int) ([]Group, error) {
	if offset < 0 || limit < 0 {
		return nil, fmt.Errorf("groups: offset %d and limit %d must not be negative: %w", offset, limit, ErrInvalidArgument)
	}
	if limit == 0 {
		return nil, nil
	}
	pages, err := perPart(ctx, q, "groups", func(p *part) ([]Group, error) {
		return Call(ctx, p, func(ctx context.Context) ([]Group, error) {
			gs, _, err := p.Store.Groups(ctx, 0, int64(offset+limit))
			return gs, err
		}, nil)
	})
	if err != nil {
		return nil, err
	}
	var all []Group
	for _, p := range pages {
		all = append(all, p...)
	}
	slices.SortStableFunc(all, func(a, b Group) int {
		if c := cmp.Compare(b.Ready+b.InFlight, a.Ready+a.InFlight); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if offset >= len(all) {
		return nil, nil
	}
	return all[offset:min(len(all), offset+limit)], nil
}

// SetGroupLimits records the queue's group limits in every part (0: none).
func (q *Queue) SetGroupLimits(ctx context.Context, concurrency int, interval time.Duration) error {
	_, err := perPart(ctx, q, "", func(p *part) (struct{}, error) {
		return Call(ctx, p, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, p.Store.SetGroupLimits(ctx, concurrency, interval)
		}, nil)
	})
	return err
}

// SetGroupPaused pauses or resumes group g.
func (q *Queue) SetGroupPaused(ctx context.Context, g string, paused bool) error {
	if err := CheckGroup(g); err != nil {
		return err
	}
	if err := q.Err(); err != nil {
		return err
	}
	p := q.routeGroup(g)
	_, err := Call(ctx, p, func(ctx context.Context) (bool, error) {
		return p.Store.SetGroupPaused(ctx, g, paused)
	}, nil)
	return err
}

// PurgeGroup drops the ready items of group g and returns how many.
func (q *Queue) PurgeGroup(ctx context.Context, g string) (int64, error) {
	if err := CheckGroup(g); err != nil {
		return 0, err
	}
	if err := q.Err(); err != nil {
		return 0, err
	}
	p := q.routeGroup(g)
	return Call(ctx, p, func(ctx context.Context) (int64, error) {
		return p.Store.PurgeGroup(ctx, g)
	}, nil)
}
