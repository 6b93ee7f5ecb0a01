package telemetry_test

// The instrumentation's own cost per offer+take, without Redis, to read
// against the time an Offer plus a Take take on a loopback server
// (docs/benchmarks.md):
//
//	go test -run '^$' -bench Instrumentation -benchmem ./internal/telemetry/

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/redelay/redelay/internal/telemetry"
)

// BenchmarkInstrumentation: one op is what Offer and Take add for one item:
// a send span with header injection, the sent count and send duration, and
// a receive span linked to the send span's context, the consumed count,
// lateness and receive duration.
func BenchmarkInstrumentation(b *testing.B) {
	run := func(b *testing.B, q *telemetry.Recorder) {
		ctx := context.Background()
		due := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			sctx, op, headers := q.StartSend(ctx, "id-123", 0)
			q.Sent(sctx, op, 1, nil)
			q.Consumed(ctx, due)
			q.Received(ctx, due, telemetry.Msg{ID: "id-123", Attempt: 1, Due: due, Headers: headers})
		}
	}
	b.Run("none", func(b *testing.B) { run(b, nil) }) // what a build without instrumentation does
	b.Run("noop", func(b *testing.B) { run(b, telemetry.New(telemetry.Config{}, "bench")) })
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discard{})))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
		run(b, telemetry.New(telemetry.Config{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}}, "bench"))
	})
}

// BenchmarkConsumeInstrumentation: one op is what Consume adds for one
// item besides the consumed count: a process span linked to (and a child
// of) the send span's context, its duration, and an ack span under it with
// its duration.
func BenchmarkConsumeInstrumentation(b *testing.B) {
	run := func(b *testing.B, q *telemetry.Recorder, headers map[string]string) {
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			pctx, op := q.StartProcess(ctx, "id-123", 1, headers)
			q.Processed(pctx, op, nil)
			sctx, settle := q.StartSettle(q.Within(ctx, op), telemetry.Ack, "id-123", headers)
			q.Settled(sctx, settle, false, nil)
		}
	}
	b.Run("none", func(b *testing.B) { run(b, nil, nil) })
	b.Run("noop", func(b *testing.B) { run(b, telemetry.New(telemetry.Config{}, "bench"), nil) })
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discard{})))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		defer func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) }()
		q := telemetry.New(telemetry.Config{TracerProvider: tp, MeterProvider: mp, Propagator: propagation.TraceContext{}}, "bench")
		_, op, headers := q.StartSend(context.Background(), "id-123", 0)
		q.Sent(context.Background(), op, 1, nil)
		run(b, q, headers)
	})
}

// discard is a span exporter that drops everything.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
