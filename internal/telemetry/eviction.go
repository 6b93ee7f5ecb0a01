package telemetry

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/tracing"
)

// RegisterEviction registers the redelay.redis.eviction gauge of the
// queue: at each collection, 1 when policy (the
// maxmemory-policy as last read, no network call) evicts, 0 when it does
// not, nothing while it is unknown (""). The returned function
// unregisters it.
func (q *Recorder) RegisterEviction(policy func() string) (unregister func()) {
	if q == nil || q.meter == nil {
		return func() {}
	}
	gauge, err := q.meter.Int64ObservableGauge(tracing.MetricEviction,
		metric.WithDescription("1 while Redis may evict keys when full (maxmemory-policy not noeviction), 0 while it may not."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	reg, err := q.meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		p := policy()
		if p == "" {
			return nil
		}
		v := int64(0)
		if store.Evicts(p) {
			v = 1
		}
		o.ObserveInt64(gauge, v, metric.WithAttributes(q.with(tracing.RedisPolicyKey.String(p))...))
		return nil
	}, gauge)
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}
