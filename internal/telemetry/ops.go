package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/redelay/redelay/tracing"
)

// operation is a messaging operation of a queue, as the conventions see
// it.
type operation uint8

const (
	opSend operation = iota
	opReceive
	opProcess
	opAck
	opNack
	opDeadLetter
	operations
)

// name is the operation's messaging.operation.name, the first word of its
// spans' names.
func (op operation) name() string {
	switch op {
	case opSend:
		return tracing.SpanSend
	case opReceive:
		return tracing.SpanReceive
	case opProcess:
		return tracing.SpanProcess
	case opAck:
		return tracing.SpanAck
	case opNack:
		return tracing.SpanNack
	default:
		return tracing.SpanDeadLetter
	}
}

// attrs are messaging.operation.name and messaging.operation.type, in that
// order.
func (op operation) attrs() []attribute.KeyValue {
	name := semconv.MessagingOperationName(op.name())
	switch op {
	case opSend:
		return []attribute.KeyValue{name, semconv.MessagingOperationTypeSend}
	case opReceive:
		return []attribute.KeyValue{name, semconv.MessagingOperationTypeReceive}
	case opProcess:
		return []attribute.KeyValue{name, semconv.MessagingOperationTypeProcess}
	default:
		return []attribute.KeyValue{name, semconv.MessagingOperationTypeSettle}
	}
}

// Settlement is how a delivery is settled.
type Settlement uint8

const (
	Ack        Settlement = iota // done
	Nack                         // a retry, or the dead letters after the last attempt
	DeadLetter                   // the dead letters at once (SkipRetry)
	settlements
)

func (s Settlement) op() operation { return opAck + operation(s) }

// Op is one operation in flight, from its Start call to its end: its span
// (nil when not tracing) and when it started (zero when neither a span nor
// a duration needs it). The zero Op does nothing.
type Op struct {
	span     trace.Span
	start    time.Time
	op       operation
	traced   bool // span was started
	measured bool // its duration is recorded
}

// recording says o has a span that records attributes.
func (o Op) recording() bool { return o.traced && o.span.IsRecording() }

// Msg is what the span of an operation on items needs of each.
type Msg struct {
	ID      string
	Attempt int               // 1 on the first delivery
	Due     time.Time         // zero: not known
	Headers map[string]string // the envelope's: the creation context
}

// begin starts an operation: its span, under ctx's, with opts, the start
// time and links, when tracing; the clock read when the span or the
// operation's duration needs it.
func (q *Recorder) begin(ctx context.Context, m *mode, op operation, name string, opts []trace.SpanStartOption, links []trace.Link) (context.Context, Op) {
	measured := q.duration(op).Enabled(ctx)
	if !m.tracing && !measured {
		return ctx, Op{}
	}
	o := Op{op: op, measured: measured}
	o.start = time.Now()
	if !m.tracing {
		return ctx, o
	}
	all := make([]trace.SpanStartOption, 0, len(opts)+2)
	all = append(all, opts...)
	all = append(all, trace.WithTimestamp(o.start))
	if len(links) > 0 {
		all = append(all, trace.WithLinks(links...))
	}
	ctx, o.span = q.tracer.Start(ctx, name, all...)
	o.traced = true
	return ctx, o
}

// duration is the histogram of op's duration.
func (q *Recorder) duration(op operation) metric.Float64Histogram {
	if op == opProcess {
		return q.processDuration
	}
	return q.opDuration
}

// finish ends o: records its duration, and ends its span; when err is not
// nil, both say error.type, which finish returns, and the span records err
// and an error status.
func (q *Recorder) finish(ctx context.Context, o Op, err error) (errType string) {
	if err == nil && !o.traced && !o.measured {
		return ""
	}
	var end time.Time
	if !o.start.IsZero() {
		end = time.Now()
	}
	if err != nil {
		errType = q.errType(err)
	}
	if o.measured {
		took := end.Sub(o.start).Seconds()
		if err == nil {
			q.duration(o.op).Record(ctx, took, q.durOpts[o.op]...)
		} else {
			q.duration(o.op).Record(ctx, took, metric.WithAttributes(withError(q.durAttrs[o.op], errType)...))
		}
	}
	if !o.traced {
		return errType
	}
	if err != nil {
		o.span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		o.span.RecordError(err)
		o.span.SetStatus(codes.Error, err.Error())
	}
	o.span.End(trace.WithTimestamp(end))
	return errType
}

// withError returns attrs followed by error.type, in a new slice.
func withError(attrs []attribute.KeyValue, errType string) []attribute.KeyValue {
	return append(attrs[:len(attrs):len(attrs)], semconv.ErrorTypeKey.String(errType))
}

// StartSend starts one offer: its PRODUCER span, whose context is the
// item's creation context, returned in the headers that carry it (nil
// when the propagator writes nothing).
func (q *Recorder) StartSend(ctx context.Context, id string, delay time.Duration) (context.Context, Op, map[string]string) {
	return q.startSend(ctx, id, -1, delay)
}

// StartSendBatch starts an offer of n items at once, with one PRODUCER
// span; every item of the batch carries the returned headers.
func (q *Recorder) StartSendBatch(ctx context.Context, n int, delay time.Duration) (context.Context, Op, map[string]string) {
	return q.startSend(ctx, "", n, delay)
}

// startSend starts a send of the item id (batch < 0) or of a batch of
// that many items.
func (q *Recorder) startSend(ctx context.Context, id string, batch int, delay time.Duration) (context.Context, Op, map[string]string) {
	if q == nil {
		return ctx, Op{}, nil
	}
	m := q.current()
	ctx, o := q.begin(ctx, m, opSend, q.sendName, q.sendOpts, nil)
	if o.recording() {
		what := semconv.MessagingMessageID(id)
		if batch >= 0 {
			what = semconv.MessagingBatchMessageCount(batch)
		}
		o.span.SetAttributes(what, tracing.DelayKey.Int64(delay.Milliseconds()))
	}
	return ctx, o, q.inject(ctx, m)
}

// inject writes ctx's trace context into new headers (nil when the
// propagator writes nothing).
func (q *Recorder) inject(ctx context.Context, m *mode) map[string]string {
	if !m.propagating {
		return nil // no carrier to allocate for a propagator without fields
	}
	var c Carrier
	q.prop.Inject(ctx, &c)
	return c.M
}

// Sent ends an offer of n items (recording err) and counts them: the
// messages the producer attempted to send, with error.type when the offer
// failed.
func (q *Recorder) Sent(ctx context.Context, o Op, n int, err error) {
	if q == nil {
		return
	}
	errType := q.finish(ctx, o, err)
	switch {
	case n <= 0:
	case err == nil:
		q.sent.Add(ctx, int64(n), q.sentOpts...)
	default:
		q.sent.Add(ctx, int64(n), metric.WithAttributes(withError(q.sentAttrs, errType)...))
	}
}

// Consumed records one item handed out (taken, received, or leased for a
// Consume handler): the consumed count, and its lateness when due is
// known.
func (q *Recorder) Consumed(ctx context.Context, due time.Time) {
	if q == nil {
		return
	}
	q.consumed.Add(ctx, 1, q.consumedOpts...)
	if !due.IsZero() && q.lateness.Enabled(ctx) {
		q.lateness.Record(ctx, max(time.Since(due), 0).Seconds(), q.ownRecOpts...)
	}
}

// Received records a call of the application's (Take, Poll, Receive) that
// returned msg: its CLIENT receive span under ctx's, linked to the item's
// creation context, and its duration, from start (when the call began, or
// the item fell due if later) to now.
func (q *Recorder) Received(ctx context.Context, start time.Time, msg Msg) {
	if q != nil {
		q.received(ctx, start, msg, nil)
	}
}

// ReceivedBatch is Received for a batch call (TakeBatch, ReceiveBatch):
// one span for all of msgs, linked to each one's creation context.
func (q *Recorder) ReceivedBatch(ctx context.Context, start time.Time, msgs []Msg) {
	if q != nil && len(msgs) > 0 {
		q.received(ctx, start, Msg{}, msgs)
	}
}

// received records a receive of one (batch nil) or a batch.
func (q *Recorder) received(ctx context.Context, start time.Time, one Msg, batch []Msg) {
	m := q.current()
	measured := q.opDuration.Enabled(ctx)
	if !m.tracing && !measured {
		return // not even the clock to read
	}
	now := time.Now()
	// A consumer that was already waiting when its item was offered did
	// not wait for that item before it was due: start there, so the span
	// never begins before its producer's.
	due := one.Due
	for _, msg := range batch {
		if due.IsZero() || (!msg.Due.IsZero() && msg.Due.Before(due)) {
			due = msg.Due
		}
	}
	if due.After(start) && due.Before(now) {
		start = due
	}
	if measured {
		q.opDuration.Record(ctx, now.Sub(start).Seconds(), q.durOpts[opReceive]...)
	}
	if !m.tracing {
		return
	}
	var links []trace.Link
	if batch == nil {
		links = q.links(links, one.Headers)
	}
	for _, msg := range batch {
		links = q.links(links, msg.Headers)
	}
	opts := make([]trace.SpanStartOption, 0, len(q.receiveOpts)+2)
	opts = append(opts, q.receiveOpts...)
	opts = append(opts, trace.WithTimestamp(start))
	if len(links) > 0 {
		opts = append(opts, trace.WithLinks(links...))
	}
	_, span := q.tracer.Start(ctx, q.receiveName, opts...)
	if span.IsRecording() {
		if batch == nil {
			span.SetAttributes(semconv.MessagingMessageID(one.ID), tracing.AttemptKey.Int(one.Attempt))
		} else {
			span.SetAttributes(semconv.MessagingBatchMessageCount(len(batch)))
		}
	}
	span.End(trace.WithTimestamp(now))
}

// links appends a link to the creation context the headers carry, if
// any.
func (q *Recorder) links(links []trace.Link, headers map[string]string) []trace.Link {
	if c := q.creation(headers); c.IsValid() {
		links = append(links, trace.Link{SpanContext: c})
	}
	return links
}

// StartProcess starts one Consume handler call: its CONSUMER span, linked
// to the item's creation context, and a child of it unless ctx has a span
// (then a child of that one). The returned context carries the span, or,
// when not tracing, the creation context as a remote parent.
func (q *Recorder) StartProcess(ctx context.Context, id string, attempt int, headers map[string]string) (context.Context, Op) {
	if q == nil {
		return ctx, Op{}
	}
	m := q.current()
	creation := q.creation(headers)
	var links []trace.Link
	if creation.IsValid() {
		if !trace.SpanContextFromContext(ctx).IsValid() {
			ctx = trace.ContextWithRemoteSpanContext(ctx, creation)
		}
		if m.tracing {
			links = []trace.Link{{SpanContext: creation}}
		}
	}
	ctx, o := q.begin(ctx, m, opProcess, q.processName, q.processOpts, links)
	if o.recording() {
		o.span.SetAttributes(semconv.MessagingMessageID(id), tracing.AttemptKey.Int(attempt))
	}
	return ctx, o
}

// Within returns ctx carrying o's span, when o has one: what an operation
// done on the behalf of o after o ends hangs under.
func (q *Recorder) Within(ctx context.Context, o Op) context.Context {
	if q == nil || !o.traced {
		return ctx
	}
	return trace.ContextWithSpan(ctx, o.span)
}

// Processed ends a handler call that returned err, and records its
// duration.
func (q *Recorder) Processed(ctx context.Context, o Op, err error) {
	if q != nil {
		q.finish(ctx, o, err)
	}
}

// StartSettle starts the settlement s of the delivery of item id: its
// CLIENT span under ctx's, linked to the item's creation context.
func (q *Recorder) StartSettle(ctx context.Context, s Settlement, id string, headers map[string]string) (context.Context, Op) {
	if q == nil {
		return ctx, Op{}
	}
	m := q.current()
	var links []trace.Link
	if m.tracing {
		links = q.links(nil, headers)
	}
	ctx, o := q.begin(ctx, m, s.op(), q.settleNames[s], q.settleOpts[s], links)
	if o.recording() {
		o.span.SetAttributes(semconv.MessagingMessageID(id))
	}
	return ctx, o
}

// Settled ends a settlement that returned err; dead says it moved the item
// to the dead letters.
func (q *Recorder) Settled(ctx context.Context, o Op, dead bool, err error) {
	if q == nil {
		return
	}
	if o.op != opAck && o.recording() {
		o.span.SetAttributes(tracing.DeadLetteredKey.Bool(dead))
	}
	q.finish(ctx, o, err)
}

// Acked counts acked deliveries.
func (q *Recorder) Acked(ctx context.Context, n int) {
	if q != nil && n > 0 {
		q.acked.Add(ctx, int64(n), q.ownAddOpts...)
	}
}

// Nacked counts deliveries given back for a retry.
func (q *Recorder) Nacked(ctx context.Context) {
	if q != nil {
		q.nacked.Add(ctx, 1, q.ownAddOpts...)
	}
}

// DeadLettered counts items moved to the dead letters.
func (q *Recorder) DeadLettered(ctx context.Context, n int) {
	if q != nil && n > 0 {
		q.dead.Add(ctx, int64(n), q.ownAddOpts...)
	}
}

// Expired counts items past their TTL, moved to the dead letters instead
// of being delivered (counted as dead-lettered too).
func (q *Recorder) Expired(ctx context.Context, n int) {
	if q != nil && n > 0 {
		q.expired.Add(ctx, int64(n), q.ownAddOpts...)
		q.dead.Add(ctx, int64(n), q.ownAddOpts...)
	}
}

// Transferred records a transfer run: a span and the batch size when it
// moved items, the error count when it failed.
func (q *Recorder) Transferred(ctx context.Context, start time.Time, moved int, err error) {
	if q == nil {
		return
	}
	if err != nil {
		q.transferErrors.Add(ctx, 1, q.ownAddOpts...)
	}
	if moved == 0 && err == nil {
		return // empty runs leave no trace
	}
	if moved > 0 {
		q.batch.Record(ctx, int64(moved), q.ownRecOpts...)
	}
	if !q.current().tracing {
		return
	}
	_, span := q.tracer.Start(ctx, q.transferName, append(q.transferOpts[:len(q.transferOpts):len(q.transferOpts)], trace.WithTimestamp(start))...)
	if span.IsRecording() {
		span.SetAttributes(tracing.TransferMovedKey.Int(moved))
	}
	if err != nil {
		span.SetAttributes(semconv.ErrorTypeKey.String(q.errType(err)))
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// creation is the creation context the headers carry (invalid when none).
func (q *Recorder) creation(headers map[string]string) trace.SpanContext {
	if len(headers) == 0 {
		return trace.SpanContext{}
	}
	return trace.SpanContextFromContext(q.prop.Extract(context.Background(), &Carrier{M: headers}))
}
