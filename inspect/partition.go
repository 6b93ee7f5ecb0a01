package inspect

import (
	"context"
	"slices"
	"time"
)

// listParts is List for a queue with partitions: the first offset+limit
// items of each partition, merged in the order List documents.
func (in *Inspector) listParts(ctx context.Context, t target, st State, offset, limit int) ([]Item, error) {
	var all []Item
	for _, q := range t.parts {
		v, err := newView(ctx, q, st, t.codec)
		if err != nil {
			return nil, err
		}
		for off := 0; off < offset+limit; {
			n := min(MaxPage, offset+limit-off)
			entries, err := in.page(ctx, q, st, off, n)
			if err != nil {
				return nil, err
			}
			all = append(all, v.items(entries)...)
			if len(entries) < n {
				break
			}
			off += len(entries)
		}
	}
	slices.SortStableFunc(all, func(a, b Item) int {
		switch st {
		case Ready:
			if a.Priority != b.Priority {
				return b.Priority - a.Priority
			}
		case Inflight:
			if c := deadlineOrder(a.LeaseDeadline, b.LeaseDeadline); c != 0 {
				return c
			}
		}
		return a.DueAt.Compare(b.DueAt)
	})
	if offset >= len(all) {
		return []Item{}, nil
	}
	return all[offset:min(offset+limit, len(all))], nil
}

// deadlineOrder orders lease deadlines, the zero time (not leased yet)
// last.
func deadlineOrder(a, b time.Time) int {
	switch {
	case a.IsZero() && b.IsZero():
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}
