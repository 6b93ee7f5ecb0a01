package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/redelay/redelay/tracing"
)

// Reading is what a queue's gauges report, read at one instant.
type Reading struct {
	Delayed, Retry, Ready, Inflight, Dead int64
	Paused                                bool
	// Latency is how long the oldest ready item has waited since it fell
	// due (zero when nothing is ready).
	Latency time.Duration
	// DeadDropped is how many dead letters the queue's bounds dropped
	// (a total: the counter redelay.messages.dead_dropped).
	DeadDropped int64
}

// RegisterGauges registers the gauges of this queue: redelay.queue.depth
// by state, redelay.queue.latency and redelay.queue.paused, and the
// counter redelay.messages.dead_dropped, all from one
// call of read per collection. The returned function unregisters them: a
// registration holds read, and with it the queue, so it lasts only while
// the queue runs background work.
func (q *Recorder) RegisterGauges(read func(context.Context) (Reading, error)) (unregister func()) {
	if q == nil || q.meter == nil {
		return func() {}
	}
	depth, err := q.meter.Int64ObservableGauge(tracing.MetricDepth, metric.WithUnit("{message}"),
		metric.WithDescription("Items in the queue by state: delayed, retry, ready, inflight, dead."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	latency, err := q.meter.Float64ObservableGauge(tracing.MetricLatency, metric.WithUnit("s"),
		metric.WithDescription("How long the oldest ready item has waited since it fell due; 0 when none is ready."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	paused, err := q.meter.Int64ObservableGauge(tracing.MetricPaused, metric.WithUnit("{queue}"),
		metric.WithDescription("1 while the queue is paused, else 0."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	dropped, err := q.meter.Int64ObservableCounter(tracing.MetricDeadDropped, metric.WithUnit("{message}"),
		metric.WithDescription("Dead letters dropped, oldest first, to keep the queue within its bounds (blocking.WithDeadLetterBounds)."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	names := [5]string{"delayed", "retry", "ready", "inflight", "dead"}
	var states [5]metric.ObserveOption
	for i, s := range names {
		states[i] = metric.WithAttributeSet(attribute.NewSet(q.with(tracing.QueueStateKey.String(s))...))
	}
	own := metric.WithAttributeSet(attribute.NewSet(q.base...))
	reg, err := q.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		r, err := read(ctx)
		if err != nil {
			return err
		}
		for i, v := range [5]int64{r.Delayed, r.Retry, r.Ready, r.Inflight, r.Dead} {
			o.ObserveInt64(depth, v, states[i])
		}
		o.ObserveFloat64(latency, r.Latency.Seconds(), own)
		var p int64
		if r.Paused {
			p = 1
		}
		o.ObserveInt64(paused, p, own)
		o.ObserveInt64(dropped, r.DeadDropped, own)
		return nil
	}, depth, latency, paused, dropped)
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}
