// Package telemetry is the OpenTelemetry instrumentation of one queue: its
// spans and metrics, named as package tracing documents.
package telemetry

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/tracing"
)

// Config selects the providers; nil fields mean the otel globals.
type Config struct {
	TracerProvider trace.TracerProvider
	MeterProvider  metric.MeterProvider
	Propagator     propagation.TextMapPropagator
}

// Queue is the instrumentation of one queue. The zero value and a nil
// *Queue are valid and do nothing.
type Queue struct {
	name string
	// span names, built once
	sendName, receiveName, processName, transferName string
	tracer                                           trace.Tracer
	prop                                             propagation.TextMapPropagator
	attrs                                            metric.MeasurementOption // system + destination, shared by every measurement
	common                                           []attribute.KeyValue
	// The option lists of every call, built once: a variadic argument to
	// an interface method escapes, so building them per call allocates.
	addOpts                []metric.AddOption
	recordOpts             []metric.RecordOption
	sendOpts, transferOpts []trace.SpanStartOption
	consumerKind           trace.SpanStartOption
	noSpan                 trace.Span // what a send or process span is when tracing is off

	// Whether spans and headers are worth making, decided once per value
	// of the otel globals (see mode): watchTracer and watchProp say that
	// tracer or prop is the globals' delegating placeholder, which starts
	// to delegate when the application installs an SDK or a propagator.
	watchTracer, watchProp bool
	staticTracing          bool // tracing when !watchTracer
	modes                  atomic.Pointer[mode]

	sent, consumed, acked, nacked, dead, expired, transferErrors metric.Int64Counter
	process, lateness                                            metric.Float64Histogram
	batch                                                        metric.Int64Histogram
	meter                                                        metric.Meter
}

// New instruments the queue called name. Instrument creation errors (a
// misbehaving SDK) leave that instrument a no-op; they are reported to the
// otel error handler.
func New(cfg Config, name string) *Queue {
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
	m := mp.Meter(tracing.ScopeName)
	common := []attribute.KeyValue{semconv.MessagingSystemKey.String(tracing.System), semconv.MessagingDestinationName(name)}
	q := &Queue{
		name:         name,
		sendName:     tracing.SpanSend + " " + name,
		receiveName:  tracing.SpanReceive + " " + name,
		processName:  tracing.SpanProcess + " " + name,
		transferName: tracing.SpanTransfer + " " + name,
		tracer:       tp.Tracer(tracing.ScopeName),
		prop:         prop,
		common:       common,
		attrs:        metric.WithAttributeSet(attribute.NewSet(common...)),
		meter:        m,
		consumerKind: trace.WithSpanKind(trace.SpanKindConsumer),
	}
	q.noSpan = noop.Span{}
	q.addOpts = []metric.AddOption{q.attrs}
	q.recordOpts = []metric.RecordOption{q.attrs}
	q.sendOpts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}
	q.transferOpts = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindInternal)}
	switch {
	case isType(q.tracer, globalPkg, "tracer"):
		q.watchTracer = true
	default:
		q.staticTracing = !isNoopTracer(q.tracer)
	}
	q.watchProp = isType(prop, globalPkg, "textMapPropagator")
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		if err != nil {
			otel.Handle(err)
		}
		return c
	}
	q.sent = counter(tracing.MetricSent, "{message}", "Items offered.")
	q.consumed = counter(tracing.MetricConsumed, "{message}", "Items taken or received.")
	q.acked = counter(tracing.MetricAcked, "{message}", "Deliveries acked.")
	q.nacked = counter(tracing.MetricNacked, "{message}", "Deliveries nacked, to be retried.")
	q.dead = counter(tracing.MetricDeadLettered, "{message}", "Items moved to the dead letters.")
	q.expired = counter(tracing.MetricExpired, "{message}", "Items past their TTL, dead-lettered instead of delivered.")
	q.transferErrors = counter(tracing.MetricTransferErr, "{run}", "Failed transfer runs.")
	var err error
	if q.process, err = m.Float64Histogram(tracing.MetricProcess, metric.WithUnit("s"),
		metric.WithDescription("Duration of Consume handler calls.")); err != nil {
		otel.Handle(err)
	}
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
	return q
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
func (q *Queue) current() *mode {
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
func (q *Queue) decide(tp trace.TracerProvider, prop propagation.TextMapPropagator) *mode {
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

// StartSend starts the PRODUCER span of one offer and returns the headers
// that carry its context (nil when the propagator writes nothing).
func (q *Queue) StartSend(ctx context.Context, id string, delay time.Duration) (context.Context, trace.Span, map[string]string) {
	if q == nil {
		return ctx, trace.SpanFromContext(ctx), nil
	}
	m := q.current()
	if !m.tracing {
		return ctx, q.noSpan, q.inject(ctx, m)
	}
	ctx, span := q.startSend(ctx)
	if span.IsRecording() {
		span.SetAttributes(semconv.MessagingMessageID(id), tracing.DelayKey.Int64(delay.Milliseconds()))
	}
	return ctx, span, q.inject(ctx, m)
}

// StartSendBatch starts one PRODUCER span for a batch of n offers; every
// item of the batch carries the returned headers.
func (q *Queue) StartSendBatch(ctx context.Context, n int, delay time.Duration) (context.Context, trace.Span, map[string]string) {
	if q == nil {
		return ctx, trace.SpanFromContext(ctx), nil
	}
	m := q.current()
	if !m.tracing {
		return ctx, q.noSpan, q.inject(ctx, m)
	}
	ctx, span := q.startSend(ctx)
	if span.IsRecording() {
		span.SetAttributes(semconv.MessagingBatchMessageCount(n), tracing.DelayKey.Int64(delay.Milliseconds()))
	}
	return ctx, span, q.inject(ctx, m)
}

func (q *Queue) startSend(ctx context.Context) (context.Context, trace.Span) {
	ctx, span := q.tracer.Start(ctx, q.sendName, q.sendOpts...)
	if span.IsRecording() {
		span.SetAttributes(q.common...)
		span.SetAttributes(semconv.MessagingOperationTypeSend, semconv.MessagingOperationName("send"))
	}
	return ctx, span
}

// inject writes ctx's trace context into new headers (nil when the
// propagator writes nothing).
func (q *Queue) inject(ctx context.Context, m *mode) map[string]string {
	if !m.propagating {
		return nil // no carrier to allocate for a propagator without fields
	}
	var c Carrier
	q.prop.Inject(ctx, &c)
	return c.M
}

// Sent ends a send span (recording err) and counts the n items that were
// offered.
func (q *Queue) Sent(ctx context.Context, span trace.Span, n int, err error) {
	if q == nil {
		return
	}
	End(span, err)
	if n > 0 {
		q.sent.Add(ctx, int64(n), q.addOpts...)
	}
}

// Received records one item taken or received: the CONSUMER span from
// start (when the call began waiting, or the item's due time if later) to
// now, and the consumed count and lateness. It returns ctx with the receive span, already ended.
func (q *Queue) Received(ctx context.Context, start time.Time, id string, attempt int, due time.Time, headers map[string]string) context.Context {
	if q == nil {
		return ctx
	}
	m := q.current()
	q.consumed.Add(ctx, 1, q.addOpts...)
	late := !due.IsZero() && q.lateness.Enabled(ctx)
	parent, link := q.consumerParent(ctx, headers)
	if !m.tracing && !late {
		return parent // not even the clock to read
	}
	now := time.Now()
	if late {
		q.lateness.Record(ctx, max(now.Sub(due), 0).Seconds(), q.recordOpts...)
	}
	if !m.tracing {
		return parent
	}
	// A consumer that was already waiting when the item was offered did
	// not wait for this item before it was due: start there, so the span
	// never begins before its producer's.
	if due.After(start) && due.Before(now) {
		start = due
	}
	ctx, span := q.tracer.Start(parent, q.receiveName, q.consumerOpts(link, trace.WithTimestamp(start))...)
	if span.IsRecording() {
		span.SetAttributes(q.common...)
		span.SetAttributes(semconv.MessagingOperationTypeReceive, semconv.MessagingOperationName("receive"),
			semconv.MessagingMessageID(id), tracing.AttemptKey.Int(attempt))
	}
	span.End(trace.WithTimestamp(now))
	return ctx
}

// StartProcess starts the CONSUMER span around one Consume handler call, a
// child of the producer's span (a link to it when ctx already has a span).
func (q *Queue) StartProcess(ctx context.Context, id string, attempt int, headers map[string]string) (context.Context, trace.Span) {
	if q == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	m := q.current()
	parent, link := q.consumerParent(ctx, headers)
	if !m.tracing {
		return parent, q.noSpan
	}
	ctx, span := q.tracer.Start(parent, q.processName, q.consumerOpts(link)...)
	if span.IsRecording() {
		span.SetAttributes(q.common...)
		span.SetAttributes(semconv.MessagingOperationTypeProcess, semconv.MessagingOperationName("process"),
			semconv.MessagingMessageID(id), tracing.AttemptKey.Int(attempt))
	}
	return ctx, span
}

// Processed ends a process span and records the handler's duration.
func (q *Queue) Processed(ctx context.Context, span trace.Span, took time.Duration, err error) {
	if q == nil {
		return
	}
	End(span, err)
	if err != nil {
		q.process.Record(ctx, took.Seconds(), metric.WithAttributes(append(q.common, semconv.ErrorTypeKey.String(errorType(err)))...))
		return
	}
	q.process.Record(ctx, took.Seconds(), q.recordOpts...)
}

// Acked counts acked deliveries.
func (q *Queue) Acked(ctx context.Context, n int) {
	if q != nil && n > 0 {
		q.acked.Add(ctx, int64(n), q.addOpts...)
	}
}

// Nacked counts deliveries given back for a retry.
func (q *Queue) Nacked(ctx context.Context) {
	if q != nil {
		q.nacked.Add(ctx, 1, q.addOpts...)
	}
}

// DeadLettered counts items moved to the dead letters.
func (q *Queue) DeadLettered(ctx context.Context, n int) {
	if q != nil && n > 0 {
		q.dead.Add(ctx, int64(n), q.addOpts...)
	}
}

// Expired counts items past their TTL, moved to the dead letters instead
// of being delivered (counted as dead-lettered too).
func (q *Queue) Expired(ctx context.Context, n int) {
	if q != nil && n > 0 {
		q.expired.Add(ctx, int64(n), q.addOpts...)
		q.dead.Add(ctx, int64(n), q.addOpts...)
	}
}

// Transferred records a transfer run: a span and the batch size when it
// moved items, the error count when it failed.
func (q *Queue) Transferred(ctx context.Context, start time.Time, moved int, err error) {
	if q == nil {
		return
	}
	if err != nil {
		q.transferErrors.Add(ctx, 1, q.addOpts...)
	}
	if moved == 0 && err == nil {
		return // empty runs leave no trace
	}
	if moved > 0 {
		q.batch.Record(ctx, int64(moved), q.recordOpts...)
	}
	if !q.current().tracing {
		return
	}
	_, span := q.tracer.Start(ctx, q.transferName, append(q.transferOpts[:len(q.transferOpts):len(q.transferOpts)], trace.WithTimestamp(start))...)
	if span.IsRecording() {
		span.SetAttributes(q.common...)
		span.SetAttributes(tracing.TransferMovedKey.Int(moved))
	}
	End(span, err)
}

// RegisterDepth registers the redelay.queue.depth gauge of this queue,
// read by read at each collection (one round trip). The returned function
// unregisters it: a registration holds read, and with it the queue, so it
// lasts only while the queue runs background work.
func (q *Queue) RegisterDepth(read func(context.Context) (store.Depths, error)) (unregister func()) {
	if q == nil || q.meter == nil {
		return func() {}
	}
	gauge, err := q.meter.Int64ObservableGauge(tracing.MetricDepth, metric.WithUnit("{message}"),
		metric.WithDescription("Items in the queue by state: delayed, retry, ready, inflight, dead."))
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	names := [5]string{"delayed", "retry", "ready", "inflight", "dead"}
	var states [5]metric.ObserveOption
	for i, s := range names {
		states[i] = metric.WithAttributeSet(attribute.NewSet(append(append([]attribute.KeyValue{}, q.common...), tracing.QueueStateKey.String(s))...))
	}
	reg, err := q.meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		d, err := read(ctx)
		if err != nil {
			return err
		}
		for i, v := range [5]int64{d.Delayed, d.Retry, d.Ready, d.Inflight, d.Dead} {
			o.ObserveInt64(gauge, v, states[i])
		}
		return nil
	}, gauge)
	if err != nil {
		otel.Handle(err)
		return func() {}
	}
	return func() { _ = reg.Unregister() }
}

// consumerParent chooses where a CONSUMER span hangs: under the caller's
// span when ctx has one (returning the producer's span context to link),
// else under the producer's span, so a consumer with a fresh context joins
// the producer's trace.
func (q *Queue) consumerParent(ctx context.Context, headers map[string]string) (context.Context, trace.SpanContext) {
	if len(headers) == 0 {
		return ctx, trace.SpanContext{}
	}
	producer := q.producer(headers)
	switch {
	case !producer.IsValid():
		return ctx, trace.SpanContext{}
	case trace.SpanContextFromContext(ctx).IsValid():
		return ctx, producer
	default:
		return trace.ContextWithRemoteSpanContext(ctx, producer), trace.SpanContext{}
	}
}

// consumerOpts are the start options of a CONSUMER span: its kind, extra,
// and a link to the producer when link is valid.
func (q *Queue) consumerOpts(link trace.SpanContext, extra ...trace.SpanStartOption) []trace.SpanStartOption {
	opts := make([]trace.SpanStartOption, 0, 2+len(extra))
	opts = append(opts, q.consumerKind)
	opts = append(opts, extra...)
	if link.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: link}))
	}
	return opts
}

func (q *Queue) producer(headers map[string]string) trace.SpanContext {
	if len(headers) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(q.prop.Extract(context.Background(), &Carrier{M: headers}))
}

// End ends span, recording err (if any) as an exception event and an error
// status.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// errorType is the error.type attribute for a handler error: its Go type.
func errorType(err error) string {
	return fmt.Sprintf("%T", err)
}
