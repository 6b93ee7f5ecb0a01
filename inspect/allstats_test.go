package inspect_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// roundTrips counts what a client sends: each command or pipeline sent to
// one server is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { r.n.Add(1); return next(ctx, cmd) }
}
func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { r.n.Add(1); return next(ctx, cmds) }
}

// TestAllStats: the stats of 40 queues, one of them with partitions, take
// a handful of round trips, not two per queue, and agree with Stats.
func TestAllStats(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		prefix := redistest.Prefix(t, rdb)
		for i := range 40 {
			opts := []blocking.Option{blocking.WithPrefix(prefix)}
			if i == 7 {
				opts = append(opts, blocking.WithPartitions(4))
			}
			q := blocking.New[int](rdb, fmt.Sprintf("q%02d", i), opts...)
			t.Cleanup(func() { _ = q.Close() })
			for j := range i%5 + 1 {
				if _, err := q.Offer(ctx, j); err != nil {
					t.Fatal(err)
				}
			}
		}
		// A name no queue can have, written by another tool.
		if err := rdb.ZAdd(ctx, keys.RegistryOf(prefix), redis.Z{Score: 1, Member: "bad{name"}).Err(); err != nil {
			t.Fatal(err)
		}
		counted := redistest.NewClientLike(t, rdb)
		rt := &roundTrips{}
		if cc, ok := counted.(*redis.ClusterClient); ok {
			cc.OnNewNode(func(n *redis.Client) { n.AddHook(rt) })
		} else {
			counted.AddHook(rt)
		}
		in := inspect.New(counted, inspect.WithPrefix(prefix))
		// A first call opens the connections, reads the eviction policy
		// (once per client) and loads the script where a node lacks it:
		// the second is counted.
		if _, err := in.AllStats(ctx); err != nil {
			t.Fatal(err)
		}
		rt.n.Store(0)
		all, err := in.AllStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		trips := rt.n.Load()
		if len(all) != 41 {
			t.Fatalf("AllStats: %d queues", len(all))
		}
		// Standalone: the registry, the stats, the other partitions. A
		// Cluster: the registry, then the others once per master at most.
		limit := int64(3)
		if _, ok := rdb.(*redis.ClusterClient); ok {
			limit = 1 + 2*3
		}
		if trips > limit {
			t.Errorf("AllStats of 41 queues took %d round trips, want at most %d", trips, limit)
		}
		check := inspect.New(rdb, inspect.WithPrefix(prefix))
		for _, s := range all {
			if s.Queue == "bad{name" {
				if s.Err == nil {
					t.Errorf("a bad name in the registry: no error")
				}
				continue
			}
			want, err := check.Stats(ctx, s.Queue)
			if err != nil || s.Err != nil {
				t.Fatalf("%s: %v, %v", s.Queue, err, s.Err)
			}
			s.Stats.Latency, want.Latency = 0, 0
			if s.Stats != want {
				t.Errorf("%s: AllStats %+v, Stats %+v", s.Queue, s.Stats, want)
			}
		}
	})
}
