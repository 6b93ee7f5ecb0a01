package blocking_test

// Throughput of a queue of 8 partitions against a queue of one (one hash
// tag, one slot, one master) on the same 3-master cluster, in one run:
//
//	go test -run '^$' -bench 'Partitions' -benchtime 20000x ./blocking/

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// BenchmarkPartitions: one op is one item offered (in batches, untimed)
// and then consumed and acked by 3 processes (3 clients, Consume of
// concurrency 32 each), timed. It reports items/s and the share of the
// script calls served by the busiest master (max-master-share: 1 when one
// master does all the work, 0.33 when 3 share it evenly).
func BenchmarkPartitions(b *testing.B) {
	c := redistest.StartCluster(b)
	admin := c.Client(b)
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("partitions=%d", n), func(b *testing.B) {
			ctx := context.Background()
			name := redistest.QueueName(b)
			if n > 1 {
				name = redistest.SpreadName(b, admin, n, 2)
			}
			const procs = 3
			qs := make([]*blocking.Queue[int], procs)
			for i := range qs {
				qs[i] = blocking.New[int](c.Client(b), name, blocking.WithPartitions(n))
				b.Cleanup(func() { _ = qs[i].Close() })
			}
			dq := delayed.New(qs[0])
			b.Cleanup(func() { _ = dq.Close() })
			values := make([]int, b.N)
			for lo := 0; lo < b.N; lo += 5000 {
				if _, err := dq.OfferBatch(ctx, values[lo:min(lo+5000, b.N)], 0); err != nil {
					b.Fatal(err)
				}
			}
			redistest.WaitFor(b, time.Minute, "every item ready", func() bool {
				st, err := qs[0].Stats(ctx)
				return err == nil && st.Ready == int64(b.N)
			})
			if err := admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				return m.ConfigResetStat(ctx).Err()
			}); err != nil {
				b.Fatal(err)
			}
			var handled atomic.Int64
			var last atomic.Int64 // when the last item was handled, Unix ns
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for _, q := range qs {
				wg.Go(func() {
					err := q.Consume(cctx, func(context.Context, *blocking.Delivery[int]) error {
						if handled.Add(1) == int64(b.N) {
							last.Store(time.Now().UnixNano())
							cancel()
						}
						return nil
					}, blocking.WithConcurrency(32))
					if !errors.Is(err, context.Canceled) {
						b.Error(err)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			// Consume's shutdown is left out of items/s (not of ns/op).
			b.ReportMetric(float64(b.N)/time.Unix(0, last.Load()).Sub(start).Seconds(), "items/s")
			var mu sync.Mutex
			var total, top int64
			_ = admin.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
				st := redistest.ReadCommandStat(b, m, "evalsha")
				mu.Lock()
				total += st.Calls
				top = max(top, st.Calls)
				mu.Unlock()
				return nil
			})
			if total > 0 {
				b.ReportMetric(float64(top)/float64(total), "max-master-share")
			}
		})
	}
}
