package inspect_test

import (
	"context"
	"errors"
	"testing"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// Eviction and Stats report the server's maxmemory-policy; on a Cluster,
// a policy that evicts on any master.
func TestEviction(t *testing.T) {
	redistest.ForEachDedicated(t, func(t *testing.T, d *redistest.Dedicated) {
		for _, policy := range []string{"volatile-lru", "allkeys-lfu", "noeviction"} {
			t.Run(policy, func(t *testing.T) {
				d.ConfigSetOne(t, "maxmemory-policy", policy)
				ctx := context.Background()
				rdb := d.Client()
				name := redistest.QueueName(t)
				if _, err := blocking.New[string](rdb, name).Offer(ctx, "x"); err != nil {
					t.Fatal(err)
				}
				in := inspect.New(d.Client())
				got, err := in.Eviction(ctx)
				if err != nil || got != policy {
					t.Fatalf("Eviction: %q, %v; want %q", got, err, policy)
				}
				st, err := in.Stats(ctx, name)
				if err != nil || st.Eviction != policy {
					t.Fatalf("Stats: %+v, %v; want Eviction %q", st, err, policy)
				}
			})
		}
	})
}

// Eviction of an inspector that cannot make calls names why.
func TestEvictionInvalidInspector(t *testing.T) {
	if _, err := inspect.New(nil).Eviction(context.Background()); !errors.Is(err, inspect.ErrInvalidArgument) {
		t.Fatalf("Eviction of an inspector without a client: %v; want ErrInvalidArgument", err)
	}
}
