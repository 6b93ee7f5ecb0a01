package tracing_test

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/tracing"
)

// The redelay.redis.eviction gauge of a consuming queue is 1 while its
// server may evict, with the policy, and 0 under noeviction.
func TestEvictionGauge(t *testing.T) {
	redistest.ForEachDedicated(t, func(t *testing.T, d *redistest.Dedicated) {
		for _, c := range []struct {
			policy string
			want   int64
		}{{"allkeys-lru", 1}, {"noeviction", 0}} {
			t.Run(c.policy, func(t *testing.T) {
				d.ConfigSetOne(t, "maxmemory-policy", c.policy)
				reader := sdkmetric.NewManualReader()
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
				t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
				ctx := context.Background()
				name := redistest.QueueName(t)
				q := blocking.New[string](d.Client(), name, blocking.WithMeterProvider(mp))
				defer q.Close()
				if _, _, err := q.Poll(ctx, 0); err != nil { // starts consuming
					t.Fatal(err)
				}
				if st, err := q.Stats(ctx); err != nil || st.Eviction != c.policy {
					t.Fatalf("Stats: %+v, %v", st, err)
				}
				var rm metricdata.ResourceMetrics
				if err := reader.Collect(ctx, &rm); err != nil {
					t.Fatal(err)
				}
				var points []metricdata.DataPoint[int64]
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == tracing.MetricEviction {
							points = append(points, g.DataPoints...)
						}
					}
				}
				if len(points) != 1 {
					t.Fatalf("%d points of %s, want 1", len(points), tracing.MetricEviction)
				}
				p := points[0]
				policy, _ := p.Attributes.Value(tracing.RedisPolicyKey)
				queue, _ := p.Attributes.Value("messaging.destination.name")
				if p.Value != c.want || policy.AsString() != c.policy || queue.AsString() != name {
					t.Fatalf("%s = %d, %s %q, queue %q; want %d, %q, %q", tracing.MetricEviction, p.Value,
						tracing.RedisPolicyKey, policy.AsString(), queue.AsString(), c.want, c.policy, name)
				}
			})
		}
	})
}
