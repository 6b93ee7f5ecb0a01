package tracing_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/tracing"
)

type bundle struct {
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	mp     *sdkmetric.MeterProvider
}

func setup(t *testing.T) (*bundle, []blocking.Option) {
	t.Helper()
	b := &bundle{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader()}
	b.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(b.spans))
	b.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(b.reader))
	t.Cleanup(func() {
		_ = b.tp.Shutdown(context.Background())
		_ = b.mp.Shutdown(context.Background())
	})
	return b, []blocking.Option{
		blocking.WithTracerProvider(b.tp), blocking.WithMeterProvider(b.mp),
		blocking.WithPropagator(propagation.TraceContext{}),
	}
}

func (b *bundle) find(t *testing.T, name string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var out []sdktrace.ReadOnlySpan
	for _, s := range b.spans.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

func attr(s sdktrace.ReadOnlySpan, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// The producer span is in the request's trace; a Take in another goroutine,
// with a fresh context, makes a receive span of its own that links the
// producer span (the item's creation context).
func TestSpansCrossTheQueue(t *testing.T) {
	b, opts := setup(t)
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name, opts...)
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	reqCtx, req := b.tp.Tracer("test").Start(context.Background(), "POST /orders")
	id, err := dq.Offer(reqCtx, "order-1", 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	req.End()

	got := make(chan error, 1)
	go func() {
		_, err := q.Take(context.Background())
		got <- err
	}()
	if err := <-got; err != nil {
		t.Fatal(err)
	}

	sends := b.find(t, "send "+name)
	if len(sends) != 1 {
		t.Fatalf("%d send spans", len(sends))
	}
	send := sends[0]
	if send.SpanKind() != trace.SpanKindProducer || send.Parent().SpanID() != req.SpanContext().SpanID() ||
		send.SpanContext().TraceID() != req.SpanContext().TraceID() {
		t.Fatalf("send span: kind %v, parent %v, want a PRODUCER child of the request", send.SpanKind(), send.Parent())
	}
	for key, want := range map[string]string{
		"messaging.system": "redelay", "messaging.destination.name": name,
		"messaging.message.id": id, "messaging.operation.type": "send",
	} {
		if v, ok := attr(send, key); !ok || v.AsString() != want {
			t.Errorf("send span %s = %q, want %q", key, v.AsString(), want)
		}
	}
	if v, ok := attr(send, "redelay.delay_ms"); !ok || v.AsInt64() != 50 {
		t.Errorf("send span delay = %v", v)
	}

	recvs := b.find(t, "receive "+name)
	if len(recvs) != 1 {
		t.Fatalf("%d receive spans", len(recvs))
	}
	recv := recvs[0]
	if links := recv.Links(); recv.SpanKind() != trace.SpanKindClient || recv.Parent().IsValid() ||
		len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
		t.Fatalf("receive span: kind %v, parent %v, links %v; want a CLIENT root span linking the send span",
			recv.SpanKind(), recv.Parent().SpanID(), linkIDs(links))
	}
	if v, _ := attr(recv, "messaging.message.id"); v.AsString() != id {
		t.Errorf("receive span message id = %q", v.AsString())
	}

	// The transfer that moved the item left a span saying how many it moved.
	// The worker ends its span when its run is over, which may be just
	// after the consumer got the item.
	var transfers []sdktrace.ReadOnlySpan
	for deadline := time.Now().Add(3 * time.Second); len(transfers) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		transfers = b.find(t, "transfer "+name)
	}
	if len(transfers) == 0 {
		t.Fatal("no transfer span")
	}
	// Runs that moved nothing (the sweep, wake-ups for nothing) leave no span.
	time.Sleep(1200 * time.Millisecond) // at least one idle sweep
	for _, s := range b.find(t, "transfer "+name) {
		if v, _ := attr(s, "redelay.transfer.moved"); v.AsInt64() < 1 {
			t.Errorf("transfer span with moved = %v", v)
		}
	}
}

// A consumer whose context already has a span keeps it as parent and links
// the producer.
func TestReceiveWithOwnSpanLinksProducer(t *testing.T) {
	b, opts := setup(t)
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name, opts...)
	defer q.Close()

	pctx, producer := b.tp.Tracer("test").Start(context.Background(), "producer")
	if _, err := q.Offer(pctx, "x"); err != nil {
		t.Fatal(err)
	}
	producer.End()
	cctx, consumer := b.tp.Tracer("test").Start(context.Background(), "consumer loop")
	d, err := q.Receive(cctx)
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Ack(cctx)
	consumer.End()
	recv := b.find(t, "receive "+name)[0]
	if recv.Parent().SpanID() != consumer.SpanContext().SpanID() {
		t.Fatalf("receive parent = %v, want the consumer's span", recv.Parent().SpanID())
	}
	send := b.find(t, "send "+name)[0]
	links := recv.Links()
	if len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanContext().SpanID() {
		t.Fatalf("receive links = %v, want the send span", links)
	}
}

// The process span is the parent of the handler's spans and a child of the
// producer; failures are recorded; retries keep the producer as parent.
func TestProcessSpans(t *testing.T) {
	b, opts := setup(t)
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name, opts...)
	defer q.Close()

	pctx, producer := b.tp.Tracer("test").Start(context.Background(), "request")
	if _, err := q.Offer(pctx, "job"); err != nil {
		t.Fatal(err)
	}
	producer.End()
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	err := q.Consume(ctx, func(hctx context.Context, d *blocking.Delivery[string]) error {
		_, child := b.tp.Tracer("test").Start(hctx, "handler work")
		child.End()
		if calls.Add(1) == 1 {
			return errors.New("first try fails")
		}
		cancel()
		return nil
	}, blocking.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume = %v", err)
	}
	send := b.find(t, "send "+name)[0]
	procs := b.find(t, "process "+name)
	if len(procs) != 2 {
		t.Fatalf("%d process spans, want 2", len(procs))
	}
	slices.SortFunc(procs, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	for i, p := range procs {
		if p.Parent().SpanID() != send.SpanContext().SpanID() || p.SpanContext().TraceID() != producer.SpanContext().TraceID() {
			t.Errorf("process span %d: parent %v, want the send span in the request's trace", i, p.Parent().SpanID())
		}
		if v, _ := attr(p, "redelay.attempt"); v.AsInt64() != int64(i+1) {
			t.Errorf("process span %d attempt = %v", i, v)
		}
	}
	if procs[0].Status().Code != codes.Error || len(procs[0].Events()) == 0 {
		t.Errorf("failed handler: status %v, events %d; want Error with an exception event", procs[0].Status(), len(procs[0].Events()))
	}
	if procs[1].Status().Code == codes.Error {
		t.Error("successful handler recorded an error")
	}
	// One failed and one successful handler call: one nack, one ack, two
	// process durations, the failed one with error.type.
	var rm metricdata.ResourceMetrics
	if err := b.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int64{}
	withErrorType := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += p.Value
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					counts[m.Name] += int64(p.Count)
					if _, ok := p.Attributes.Value("error.type"); ok && m.Name == "messaging.process.duration" {
						withErrorType += int(p.Count)
					}
				}
			}
		}
	}
	if counts["redelay.messages.nacked"] != 1 || counts["redelay.messages.acked"] != 1 ||
		counts["messaging.process.duration"] != 2 || withErrorType != 1 {
		t.Errorf("nacked %d, acked %d, process durations %d (%d with error.type); want 1, 1, 2 (1)",
			counts["redelay.messages.nacked"], counts["redelay.messages.acked"], counts["messaging.process.duration"], withErrorType)
	}
	for _, w := range b.find(t, "handler work") {
		if !slices.ContainsFunc(procs, func(p sdktrace.ReadOnlySpan) bool { return p.SpanContext().SpanID() == w.Parent().SpanID() }) {
			t.Errorf("handler span's parent %v is not a process span", w.Parent().SpanID())
		}
	}
}

// Counters, lateness, process duration and depth gauges match what happened.
func TestMetrics(t *testing.T) {
	b, opts := setup(t)
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[int](rdb, name, append(opts, blocking.WithMaxAttempts(1))...)
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()
	ctx := context.Background()
	const n = 10
	for i := range n {
		if _, err := dq.Offer(ctx, i, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dq.Offer(ctx, 99, time.Hour); err != nil { // stays pending
		t.Fatal(err)
	}
	for i := range n {
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i < 7 {
			_ = d.Ack(ctx)
		} else {
			_ = d.Nack(ctx, 0) // MaxAttempts 1: dead letters
		}
	}
	if _, err := q.Offer(ctx, 100); err != nil { // one ready
		t.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := b.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	hists := map[string]uint64{}
	depth := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if v, _ := p.Attributes.Value("messaging.destination.name"); v.AsString() == name {
						sums[m.Name] += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if v, _ := p.Attributes.Value("messaging.destination.name"); v.AsString() == name {
						hists[m.Name] += p.Count
					}
				}
			case metricdata.Histogram[int64]:
				for _, p := range d.DataPoints {
					if v, _ := p.Attributes.Value("messaging.destination.name"); v.AsString() == name {
						hists[m.Name] += p.Count
					}
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if v, _ := p.Attributes.Value("messaging.destination.name"); v.AsString() == name {
						s, _ := p.Attributes.Value("redelay.queue.state")
						depth[s.AsString()] = p.Value
					}
				}
			}
		}
	}
	want := map[string]int64{
		"messaging.client.sent.messages":     n + 2,
		"messaging.client.consumed.messages": n,
		"redelay.messages.acked":             7,
		"redelay.messages.dead_lettered":     3,
	}
	for k, v := range want {
		if sums[k] != v {
			t.Errorf("%s = %d, want %d (all: %v)", k, sums[k], v, sums)
		}
	}
	if hists["redelay.lateness"] != n {
		t.Errorf("lateness samples = %d, want %d", hists["redelay.lateness"], n)
	}
	if hists["redelay.transfer.batch.size"] == 0 {
		t.Error("no transfer batch size recorded")
	}
	for state, v := range map[string]int64{"delayed": 1, "ready": 1, "inflight": 0, "dead": 3} {
		if got, ok := depth[state]; !ok || got != v {
			t.Errorf("depth %s = %d (present %v), want %d", state, got, ok, v)
		}
	}
}

// Items past their TTL are counted as expired (and dead-lettered), by
// Receive and by Take.
func TestExpiredMetric(t *testing.T) {
	b, opts := setup(t)
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[int](rdb, name, opts...)
	defer q.Close()
	ctx := context.Background()
	for i := range 3 {
		if _, err := q.Offer(ctx, i, blocking.WithTTL(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := q.Offer(ctx, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Offer(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Take(ctx); err != nil { // passes over item 0
		t.Fatal(err)
	}
	d, err := q.Receive(ctx) // passes over items 1 and 2
	if err != nil {
		t.Fatal(err)
	}
	_ = d.Ack(ctx)
	var rm metricdata.ResourceMetrics
	if err := b.reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	sums := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if d, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range d.DataPoints {
					sums[m.Name] += p.Value
				}
			}
		}
	}
	if sums[tracing.MetricExpired] != 3 || sums[tracing.MetricDeadLettered] != 3 {
		t.Fatalf("expired %d, dead-lettered %d; want 3 and 3", sums[tracing.MetricExpired], sums[tracing.MetricDeadLettered])
	}
}
