package delayed

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/queue"
)

// A delayed queue feeding a blocking queue opened WithPartitions(n > 1)
// is n delayed queues, one per partition, each transferring its own
// partition; calls by ID go to the partition of the ID, Size, Clear and
// List to all of them. Recurring schedules live in partition 0, and their
// ticks too: IDs of a tick's shape route there.

// newPartitioned returns the delayed queue of these partitions' cores.
func newPartitioned[T any](cores []*queue.Core, o newOptions) *Queue[T] {
	d := &Queue[T]{core: cores[0], parts: make([]*Queue[T], len(cores))}
	for i, c := range cores {
		p := &Queue[T]{core: c}
		if !o.noTransfer {
			r, err := c.Register()
			if err != nil {
				for _, q := range d.parts[:i] {
					_ = q.Close()
				}
				return &Queue[T]{core: queue.Invalid(err)}
			}
			p.reg = r
		}
		d.parts[i] = p
	}
	return d
}

// route returns the partition of the item with this ID (d itself when
// the queue has one partition).
func (d *Queue[T]) route(id string) *Queue[T] {
	if d.parts == nil {
		return d
	}
	return d.parts[keys.PartitionOf(id, len(d.parts))]
}

// eachPart runs f on every partition at once (queue.EachPart).
func (d *Queue[T]) eachPart(f func(i int, p *Queue[T]) error) error {
	return queue.EachPart(d.parts, f)
}

func (d *Queue[T]) sizeParts(ctx context.Context) (int64, error) {
	if err := d.core.CheckLayout(ctx); err != nil {
		return 0, fmt.Errorf("size %s: %w", d.core.Name(), err)
	}
	sizes := make([]int64, len(d.parts))
	err := d.eachPart(func(i int, p *Queue[T]) (err error) {
		sizes[i], err = p.Size(ctx)
		return err
	})
	var n int64
	for _, s := range sizes {
		n += s
	}
	return n, err
}

func (d *Queue[T]) clearParts(ctx context.Context) error {
	if err := d.core.CheckLayout(ctx); err != nil {
		return fmt.Errorf("clear %s: %w", d.core.Name(), err)
	}
	return d.eachPart(func(_ int, p *Queue[T]) error { return p.Clear(ctx) })
}

// listParts reads the first offset+limit pending items of every
// partition and merges them by due time (ties: by partition), so a page
// of a partitioned queue costs O(n × (offset+limit)).
func (d *Queue[T]) listParts(ctx context.Context, offset, limit int) ([]Item[T], error) {
	if err := d.core.CheckLayout(ctx); err != nil {
		return nil, fmt.Errorf("list %s: %w", d.core.Name(), err)
	}
	all := make([][]Item[T], len(d.parts))
	err := d.eachPart(func(i int, p *Queue[T]) error {
		for off := 0; off < offset+limit; {
			page, err := p.List(ctx, off, min(MaxPage, offset+limit-off))
			if err != nil {
				return err
			}
			all[i] = append(all[i], page...)
			if len(page) < min(MaxPage, offset+limit-off) {
				break
			}
			off += len(page)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Item[T]
	for _, items := range all {
		out = append(out, items...)
	}
	slices.SortStableFunc(out, func(a, b Item[T]) int { return cmp.Compare(a.DueAt.UnixMicro(), b.DueAt.UnixMicro()) })
	if offset >= len(out) {
		return []Item[T]{}, nil
	}
	return out[offset:min(offset+limit, len(out))], nil
}

// offerBatchParts splits values by the partition of their generated IDs
// and offers each partition's share, all partitions at once. It returns
// the IDs of the items known offered, in slice order.
func (d *Queue[T]) offerBatchParts(ctx context.Context, values []T, delay time.Duration, o *offerOptions, trace map[string]string) ([]string, error) {
	if err := d.core.CheckLayout(ctx); err != nil {
		return nil, fmt.Errorf("offer batch %s: %w", d.core.Name(), queue.NotStored(err))
	}
	n := len(d.parts)
	ids := make([]string, len(values))
	idx := make([][]int, n)
	for i := range values {
		ids[i] = queue.NewID()
		p := keys.PartitionOf(ids[i], n)
		idx[p] = append(idx[p], i)
	}
	stored := make([]bool, len(values))
	err := d.eachPart(func(p int, part *Queue[T]) error {
		if len(idx[p]) == 0 {
			return nil
		}
		vs := make([]T, len(idx[p]))
		given := make([]string, len(idx[p]))
		for j, i := range idx[p] {
			vs[j], given[j] = values[i], ids[i]
		}
		done, err := part.offerBatch(ctx, vs, given, delay, o, trace)
		for j := range done {
			stored[idx[p][j]] = true
		}
		return err
	})
	out := make([]string, 0, len(values))
	for i, ok := range stored {
		if ok {
			out = append(out, ids[i])
		}
	}
	return out, err
}
