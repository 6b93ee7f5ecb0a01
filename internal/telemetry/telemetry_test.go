package telemetry_test

import (
	"context"
	"os"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/telemetry"
	"github.com/redelay/redelay/tracing"
)

// offerTake is what Offer and Take do to a queue's telemetry for one item.
func offerTake(ctx context.Context, q *telemetry.Recorder) map[string]string {
	sctx, op, headers := q.StartSend(ctx, "id-1", 0)
	q.Sent(sctx, op, 1, nil)
	q.Consumed(ctx, time.Now())
	q.Received(ctx, time.Now(), telemetry.Msg{ID: "id-1", Attempt: 1, Due: time.Now(), Headers: headers})
	return headers
}

// processAck is what Consume does to a queue's telemetry for one item: a
// handler call, then its ack.
func processAck(ctx context.Context, q *telemetry.Recorder, headers map[string]string) {
	pctx, op := q.StartProcess(ctx, "id-1", 1, headers)
	q.Processed(pctx, op, nil)
	sctx, settle := q.StartSettle(q.Within(ctx, op), telemetry.Ack, "id-1", headers)
	q.Settled(sctx, settle, false, nil)
}

// TestGlobalsInstalledLater: a queue built while the otel globals are still
// their no-op placeholders costs nothing, and starts to trace, propagate and
// measure as soon as the application installs an SDK and a propagator,
// without being built again. It is the only test of the package that sets
// the globals. The placeholders delegate to the first provider set, once per
// process, so the test runs in a process of its own each time (go test
// -count=2 runs it twice in one).
func TestGlobalsInstalledLater(t *testing.T) {
	ctx := context.Background()
	if os.Getenv("REDELAY_OTEL_GLOBALS_CHILD") == "" {
		out, err := redistest.Rerun(ctx, "TestGlobalsInstalledLater", "REDELAY_OTEL_GLOBALS_CHILD=1").CombinedOutput()
		if err != nil {
			t.Fatalf("in a process of its own: %v\n%s", err, out)
		}
		return
	}
	q := telemetry.New(telemetry.Config{}, "late")
	off := telemetry.New(telemetry.Config{TracerProvider: noop.NewTracerProvider()}, "off")

	if headers := offerTake(ctx, q); headers != nil {
		t.Fatalf("no-op propagator wrote headers %v", headers)
	}
	if n := testing.AllocsPerRun(100, func() { offerTake(ctx, q) }); n != 0 {
		t.Fatalf("offer+take with the no-op globals allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { processAck(ctx, q, nil) }); n != 0 {
		t.Fatalf("process+ack with the no-op globals allocates %v times, want 0", n)
	}

	prevTP, prevMP, prevProp := otel.GetTracerProvider(), otel.GetMeterProvider(), otel.GetTextMapPropagator()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetMeterProvider(prevMP)
		otel.SetTextMapPropagator(prevProp)
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})

	// A tracer provider alone: spans, but no headers to carry them.
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	if headers := offerTake(ctx, q); headers != nil {
		t.Fatalf("no-op propagator wrote headers %v", headers)
	}
	spans := exporter.GetSpans()
	if len(spans) != 2 || spans[0].Name != tracing.SpanSend+" late" || spans[1].Name != tracing.SpanReceive+" late" {
		t.Fatalf("after SetTracerProvider got spans %v, want send and receive", spanNames(spans))
	}
	if spans[0].SpanKind != trace.SpanKindProducer || spans[1].SpanKind != trace.SpanKindClient {
		t.Errorf("span kinds %v, %v", spans[0].SpanKind, spans[1].SpanKind)
	}
	if spans[1].Parent.IsValid() || len(spans[1].Links) != 0 {
		t.Errorf("receive span has parent %v and links %v without headers", spans[1].Parent, spans[1].Links)
	}

	// Then a propagator: the receive span links the send span's context.
	exporter.Reset()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	headers := offerTake(ctx, q)
	if headers["traceparent"] == "" {
		t.Fatalf("after SetTextMapPropagator got headers %v, want traceparent", headers)
	}
	spans = exporter.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("got spans %v, want send and receive", spanNames(spans))
	}
	if links := spans[1].Links; len(links) != 1 || links[0].SpanContext.SpanID() != spans[0].SpanContext.SpanID() {
		t.Errorf("receive span's links %v, want the send span %v", links, spans[0].SpanContext.SpanID())
	}

	// A queue given a no-op provider stays off whatever the globals are.
	exporter.Reset()
	offerTake(ctx, off)
	for _, s := range exporter.GetSpans() {
		t.Errorf("queue with a no-op tracer provider recorded span %q", s.Name)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	if got := sentCount(rm, "late"); got != 2 {
		t.Errorf("%s of queue late = %d after two offers with an SDK, want 2", tracing.MetricSent, got)
	}
}

// sentCount is the sent counter of queue name in rm.
func sentCount(rm metricdata.ResourceMetrics, name string) int64 {
	var n int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if m.Name != tracing.MetricSent || !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				if v, _ := dp.Attributes.Value("messaging.destination.name"); v.AsString() == name {
					n += dp.Value
				}
			}
		}
	}
	return n
}

func spanNames(spans tracetest.SpanStubs) []string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name
	}
	return names
}

// The metric names and schema URL package tracing exports are those of the
// semconv package the instrumentation follows.
func TestNamesAreTheConventions(t *testing.T) {
	for got, want := range map[string]string{
		tracing.SchemaURL:               semconv.SchemaURL,
		tracing.MetricSent:              messagingconv.ClientSentMessages{}.Name(),
		tracing.MetricConsumed:          messagingconv.ClientConsumedMessages{}.Name(),
		tracing.MetricOperationDuration: messagingconv.ClientOperationDuration{}.Name(),
		tracing.MetricProcess:           messagingconv.ProcessDuration{}.Name(),
	} {
		if got != want {
			t.Errorf("%q, want %q", got, want)
		}
	}
}
