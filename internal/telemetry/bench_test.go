package telemetry_test

// The instrumentation's own cost per offer+take, without Redis, to read
// against the ~100 µs an Offer plus a Take take on a loopback server
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
// a send span with header injection, the sent count, and a receive span with
// extraction, consumed count and lateness.
func BenchmarkInstrumentation(b *testing.B) {
	run := func(b *testing.B, q *telemetry.Queue) {
		ctx := context.Background()
		due := time.Now()
		b.ReportAllocs()
		for b.Loop() {
			sctx, span, headers := q.StartSend(ctx, "id-123", 0)
			q.Sent(sctx, span, 1, nil)
			q.Received(ctx, due, "id-123", 1, due, headers)
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

// discard is a span exporter that drops everything.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
