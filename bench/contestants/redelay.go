package contestants

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
)

func init() {
	Register("redelay-take", func() Contestant { return &Redelay{mode: "take"} })
	Register("redelay-receive", func() Contestant { return &Redelay{mode: "receive"} })
	Register("redelay-consume", func() Contestant { return &Redelay{mode: "consume"} })
}

// redelayConsumers is how many goroutines take (or handlers run) at once.
const redelayConsumers = 8

// Item is the value offered by the redelay and redisson-algo contestants:
// the id, plus Pad when the contestant is padded (omitted when empty, so an
// unpadded value is the id alone).
type Item struct {
	ID  int
	Pad string `json:",omitempty"` // redelay's msgpack codec falls back to json tags
}

// Redelay is redelay used with its defaults: a delayed.Queue feeding a
// blocking.Queue, consumed with Take (at most once), with a plain loop of
// Receive then Ack per consumer, or with Consume (leases, acks).
type Redelay struct {
	mode string // "take", "receive" or "consume"
	pad  string

	rdb    *redis.Client
	q      *blocking.Queue[Item]
	dq     *delayed.Queue[Item]
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (r *Redelay) Name() string { return "redelay-" + r.mode }

func (r *Redelay) Settings() string {
	switch r.mode {
	case "take":
		return "defaults; 8 goroutines calling Queue.Take"
	case "receive":
		return "defaults; 8 goroutines each looping Queue.Receive then Delivery.Ack"
	}
	return "defaults; Queue.Consume with WithConcurrency(8), handler returns nil (ack)"
}

// SetPadding implements Contestant: the padding is a field of the
// msgpack-encoded value.
func (r *Redelay) SetPadding(n int) { r.pad = padding(n) }

func (r *Redelay) Setup(ctx context.Context, addr string) error {
	r.rdb = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	if err := r.rdb.Ping(ctx).Err(); err != nil {
		return err
	}
	r.q = blocking.New[Item](r.rdb, "bench")
	r.dq = delayed.New(r.q)
	return nil
}

func (r *Redelay) Offer(ctx context.Context, id int, due time.Time) error {
	_, err := r.dq.OfferAt(ctx, Item{ID: id, Pad: r.pad}, due, delayed.WithID(strconv.Itoa(id)))
	return err
}

// OfferBatch uses delayed.Queue.OfferBatch, which takes one relative delay
// and generates the IDs (so items offered this way cannot be cancelled by
// the harness's id).
func (r *Redelay) OfferBatch(ctx context.Context, ids []int, due time.Time) error {
	vs := make([]Item, len(ids))
	for i, id := range ids {
		vs[i] = Item{ID: id, Pad: r.pad}
	}
	_, err := r.dq.OfferBatch(ctx, vs, max(time.Until(due), 0))
	return err
}

func (r *Redelay) Cancel(ctx context.Context, id int) error {
	_, err := r.dq.Remove(ctx, strconv.Itoa(id))
	return err
}

func (r *Redelay) Consume(ctx context.Context, arrived func(id int)) error {
	ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	// loops runs f from redelayConsumers goroutines until ctx ends,
	// pausing after an error.
	loops := func(f func() error) {
		for range redelayConsumers {
			r.wg.Go(func() {
				for ctx.Err() == nil {
					if err := f(); err != nil && ctx.Err() == nil {
						time.Sleep(10 * time.Millisecond)
					}
				}
			})
		}
	}
	switch r.mode {
	case "take":
		loops(func() error {
			v, err := r.q.Take(ctx)
			if err == nil {
				arrived(v.ID)
			}
			return err
		})
		return nil
	case "receive":
		loops(func() error {
			d, err := r.q.Receive(ctx)
			if err != nil {
				return err
			}
			arrived(d.Value.ID)
			return d.Ack(ctx)
		})
		return nil
	}
	r.wg.Go(func() {
		for ctx.Err() == nil {
			err := r.q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[Item]) error {
				arrived(d.Value.ID)
				return nil
			}, blocking.WithConcurrency(redelayConsumers))
			if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
	return nil
}

func (r *Redelay) Close() error {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	if r.dq != nil {
		_ = r.dq.Close()
	}
	if r.q != nil {
		_ = r.q.Close()
	}
	if r.rdb != nil {
		return r.rdb.Close()
	}
	return nil
}
