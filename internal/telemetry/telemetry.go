// Package telemetry is the OpenTelemetry instrumentation of one queue: its
// spans and metrics, named as package tracing documents, after the
// messaging semantic conventions v1.43.0 (the semconv package imported
// below; its schema URL is the instrumentation scope's).
package telemetry

import (
	"reflect"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/semconv/v1.43.0/messagingconv"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/redelay/redelay/tracing"
)

// Config selects the providers (nil: the otel globals) and says what the
// queue's telemetry names its server and errors by.
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
	// ServerAddress and ServerPort are the server.address and server.port
	// of every span and metric ("" and 0: left out); see ServerOf.
	ServerAddress string
	ServerPort    int
	// ErrorType names the errors of the queue's own operations for
	// error.type ("" when it does not know err; nil: none known); see
	// errorType for the rest.
	ErrorType func(error) string
}

// Recorder is the instrumentation of one queue. A nil *Recorder is valid and
// does nothing.
type Recorder struct {
	tracer    trace.Tracer
	prop      propagation.TextMapPropagator
	errorType func(error) string
	// span names, built once
	sendName, receiveName, processName, transferName string
	settleNames                                      [settlements]string
	// base is messaging.system, messaging.destination.name and server.*:
	// every span and metric has them.
	base []attribute.KeyValue
	// The options of every call, built once: a variadic argument to an
	// interface method escapes, so building them per call allocates.
	sendOpts, receiveOpts, processOpts, transferOpts []trace.SpanStartOption
	settleOpts                                       [settlements][]trace.SpanStartOption
	sentOpts, consumedOpts, ownAddOpts               []metric.AddOption
	ownRecOpts                                       []metric.RecordOption
	// durOpts are the options of each operation's duration (the process
	// duration's for opProcess), durAttrs their attributes, for the
	// error.type variant; sentAttrs those of the sent count.
	durOpts   [operations][]metric.RecordOption
	durAttrs  [operations][]attribute.KeyValue
	sentAttrs []attribute.KeyValue

	// Whether spans and headers are worth making, decided once per value
	// of the otel globals (see mode): watchTracer and watchProp say that
	// tracer or prop is the globals' delegating placeholder, which starts
	// to delegate when the application installs an SDK or a propagator.
	watchTracer, watchProp bool
	staticTracing          bool // tracing when !watchTracer
	modes                  atomic.Pointer[mode]

	sent, consumed                               metric.Int64Counter
	acked, nacked, dead, expired, transferErrors metric.Int64Counter
	opDuration, processDuration, lateness        metric.Float64Histogram
	batch                                        metric.Int64Histogram
	meter                                        metric.Meter
}

// durationBuckets are the bucket bounds of the duration histograms: the
// conventions' advice for messaging.client.operation.duration and
// messaging.process.duration.
func durationBuckets() []float64 {
	return []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
}

// New instruments the queue called name. Instrument creation errors (a
// misbehaving SDK) leave that instrument a no-op; they are reported to the
// otel error handler.
func New(cfg Config, name string) *Recorder {
	tp, mp, prop := cfg.TracerProvider, cfg.MeterProvider, cfg.Propagator
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	if prop == nil {
		prop = otel.GetTextMapPropagator()
	}
	base := []attribute.KeyValue{semconv.MessagingSystemKey.String(tracing.System), semconv.MessagingDestinationName(name)}
	if cfg.ServerAddress != "" {
		base = append(base, semconv.ServerAddress(cfg.ServerAddress))
		if cfg.ServerPort > 0 {
			base = append(base, semconv.ServerPort(cfg.ServerPort))
		}
	}
	q := &Recorder{
		tracer:       tp.Tracer(tracing.ScopeName, trace.WithSchemaURL(semconv.SchemaURL)),
		prop:         prop,
		errorType:    cfg.ErrorType,
		sendName:     tracing.SpanSend + " " + name,
		receiveName:  tracing.SpanReceive + " " + name,
		processName:  tracing.SpanProcess + " " + name,
		transferName: tracing.SpanTransfer + " " + name,
		base:         base,
		meter:        mp.Meter(tracing.ScopeName, metric.WithSchemaURL(semconv.SchemaURL)),
	}
	q.buildOptions(name)
	switch {
	case isType(q.tracer, globalPkg, "tracer"):
		q.watchTracer = true
	default:
		q.staticTracing = !isNoopTracer(q.tracer)
	}
	q.watchProp = isType(prop, globalPkg, "textMapPropagator")
	q.instruments()
	return q
}

// with returns base followed by kvs, in a new slice.
func (q *Recorder) with(kvs ...attribute.KeyValue) []attribute.KeyValue {
	return append(append(make([]attribute.KeyValue, 0, len(q.base)+len(kvs)), q.base...), kvs...)
}

// buildOptions makes the span names and the per-call options.
func (q *Recorder) buildOptions(name string) {
	span := func(kind trace.SpanKind, kvs ...attribute.KeyValue) []trace.SpanStartOption {
		return []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(q.with(kvs...)...)}
	}
	// send is PRODUCER: its context is the message's creation context.
	q.sendOpts = span(trace.SpanKindProducer, opSend.attrs()...)
	q.receiveOpts = span(trace.SpanKindClient, opReceive.attrs()...)
	q.processOpts = span(trace.SpanKindConsumer, opProcess.attrs()...)
	q.transferOpts = span(trace.SpanKindInternal)
	for s := range settlements {
		q.settleNames[s] = s.op().name() + " " + name
		q.settleOpts[s] = span(trace.SpanKindClient, s.op().attrs()...)
	}

	add := func(kvs ...attribute.KeyValue) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(q.with(kvs...)...))}
	}
	rec := func(kvs []attribute.KeyValue) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	}
	// The conventions' metrics carry messaging.operation.name; the
	// operation duration messaging.operation.type too.
	q.sentAttrs = q.with(opSend.attrs()[0])
	q.sentOpts = add(opSend.attrs()[0])
	q.consumedOpts = add(opReceive.attrs()[0])
	q.ownAddOpts = add()
	q.ownRecOpts = rec(q.base)
	for op := range operations {
		if op == opProcess {
			// messaging.process.duration has no operation type.
			q.durAttrs[op] = q.with(op.attrs()[0])
		} else {
			q.durAttrs[op] = q.with(op.attrs()...)
		}
		q.durOpts[op] = rec(q.durAttrs[op])
	}
}

// instruments creates the queue's instruments.
func (q *Recorder) instruments() {
	m := q.meter
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			otel.Handle(err)
		}
		return c
	}
	sent, err := messagingconv.NewClientSentMessages(m)
	handle(err)
	consumed, err := messagingconv.NewClientConsumedMessages(m)
	handle(err)
	opDuration, err := messagingconv.NewClientOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets()...))
	handle(err)
	processDuration, err := messagingconv.NewProcessDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets()...))
	handle(err)
	q.sent, q.consumed = sent.Inst(), consumed.Inst()
	q.opDuration, q.processDuration = opDuration.Inst(), processDuration.Inst()
	q.acked = counter(tracing.MetricAcked, "{message}", "Deliveries acked.")
	q.nacked = counter(tracing.MetricNacked, "{message}", "Deliveries nacked, to be retried.")
	q.dead = counter(tracing.MetricDeadLettered, "{message}", "Items moved to the dead letters.")
	q.expired = counter(tracing.MetricExpired, "{message}", "Items past their TTL, dead-lettered instead of delivered.")
	q.transferErrors = counter(tracing.MetricTransferErr, "{run}", "Failed transfer runs.")
	if q.lateness, err = m.Float64Histogram(tracing.MetricLateness, metric.WithUnit("s"),
		metric.WithDescription("Delivery time minus due time."),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)); err != nil {
		otel.Handle(err)
	}
	if q.batch, err = m.Int64Histogram(tracing.MetricBatch, metric.WithUnit("{message}"),
		metric.WithDescription("Items moved by one transfer run."),
		metric.WithExplicitBucketBoundaries(1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000, 100000)); err != nil {
		otel.Handle(err)
	}
}

// handle reports an instrument creation error (the semconv constructors
// return a no-op instrument with it).
func handle(err error) {
	if err != nil {
		otel.Handle(err)
	}
}

// globalPkg holds the placeholders the otel globals return until an
// application installs its providers: a placeholder tracer makes
// non-recording spans (allocating one each) until then, and delegates to the
// first provider installed from then on.
const globalPkg = "go.opentelemetry.io/otel/internal/global"

// mode is what the queue's tracer and propagator do while the otel globals
// are tp and prop. A Queue decides it again when either global changes, so
// that an SDK or a propagator installed after New takes effect at once.
type mode struct {
	tp   trace.TracerProvider
	prop propagation.TextMapPropagator
	// tpFixed and propFixed: that global is not watched (the queue does
	// not follow it, or its value cannot be compared), so a change of it
	// does not decide again.
	tpFixed, propFixed bool
	// tracing: the tracer may record spans or make span contexts.
	// propagating: the propagator writes headers.
	tracing, propagating bool
}

// current returns the mode for the otel globals as they are now: the
// cached one unless a global changed since. It costs two atomic loads and
// two comparisons.
func (q *Recorder) current() *mode {
	tp, prop := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	if m := q.modes.Load(); m != nil && (m.tpFixed || m.tp == tp) && (m.propFixed || m.prop == prop) {
		return m
	}
	m := q.decide(tp, prop)
	q.modes.Store(m)
	return m
}

// decide works out the mode for the otel globals tp and prop. It caches a
// global only when comparing it cannot panic; a global that cannot be
// compared leaves its part on, which is always correct, only slower.
func (q *Recorder) decide(tp trace.TracerProvider, prop propagation.TextMapPropagator) *mode {
	m := &mode{tracing: q.staticTracing, propagating: true, tpFixed: true, propFixed: true}
	if q.watchTracer {
		m.tracing = true
		if reflect.ValueOf(tp).Comparable() {
			m.tp, m.tpFixed = tp, false
			m.tracing = !noopGlobalProvider(tp)
		}
	}
	if !q.watchProp || reflect.ValueOf(prop).Comparable() {
		if q.watchProp {
			m.prop, m.propFixed = prop, false
		}
		m.propagating = len(q.prop.Fields()) > 0
	}
	return m
}

// noopGlobalProvider reports whether the global tracer provider tp leaves
// the placeholder tracer of a queue making no-op spans: tp is the
// placeholder itself with no SDK behind it, or a no-op provider. (The
// placeholder tracer delegates to the first provider ever installed; an
// application that installs a no-op one after an SDK turns the queue's
// spans off.)
func noopGlobalProvider(tp trace.TracerProvider) bool {
	if isType(tp, globalPkg, "tracerProvider") {
		// Without a delegate the placeholder hands out placeholder
		// tracers; with one, the delegate's.
		return isType(tp.Tracer(tracing.ScopeName), globalPkg, "tracer")
	}
	return isNoopTracer(tp.Tracer(tracing.ScopeName))
}

// isNoopTracer reports whether t is one of otel's no-op tracers.
func isNoopTracer(t trace.Tracer) bool {
	if _, ok := t.(noop.Tracer); ok {
		return true
	}
	return isType(t, "go.opentelemetry.io/otel/trace", "noopTracer") // trace.NewNoopTracerProvider's
}

// isType reports whether x is a pkg.name or a *pkg.name.
func isType(x any, pkg, name string) bool {
	t := reflect.TypeOf(x)
	if t == nil {
		return false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t.PkgPath() == pkg && t.Name() == name
}

// Carrier is an envelope's header map as a propagation carrier that
// allocates only when a propagator writes something.
type Carrier struct{ M map[string]string }

// Get implements propagation.TextMapCarrier.
func (c *Carrier) Get(key string) string { return c.M[key] }

// Set implements propagation.TextMapCarrier.
func (c *Carrier) Set(key, value string) {
	if c.M == nil {
		c.M = make(map[string]string, 2)
	}
	c.M[key] = value
}

// Keys implements propagation.TextMapCarrier.
func (c *Carrier) Keys() []string {
	keys := make([]string, 0, len(c.M))
	for k := range c.M {
		keys = append(keys, k)
	}
	return keys
}
