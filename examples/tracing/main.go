// Tracing follows orders through a delayed queue with OpenTelemetry: the
// request that places an order, redelay's send, process, ack and transfer spans,
// the handler's own span and go-redis's command spans, in one trace; and the
// queue's metrics on a Prometheus endpoint.
//
// It is a module of its own, so that the exporters it uses stay out of
// redelay's go.mod:
//
//	cd examples/tracing && go run .                              # embedded miniredis
//	cd examples/tracing && REDIS_ADDR=localhost:6379 go run .    # a Redis server
//
// Spans are sent to an OTLP/HTTP collector when OTEL_EXPORTER_OTLP_ENDPOINT
// is set (e.g. http://localhost:4318, as for Jaeger), and written to a file
// as JSON, one per line, with -spans FILE; otherwise they are only kept in
// memory for the summary. Metrics are served at
// http://127.0.0.1:2112/metrics (METRICS_ADDR to change it). At the end the
// program scrapes that endpoint once, prints the queue's metrics and the
// trace tree of the last order, and exits 1 if that tree is not the
// expected one, so the example doubles as a check of the instrumentation.
//
//	cd examples/tracing && go run . -spans spans.jsonl           # every span, as JSON
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/tracing"
)

const (
	queueName = "orders"
	// payWithin is how long a customer has to pay before the order is
	// closed. Short for the demo; a shop would use something like 30 minutes.
	payWithin = 300 * time.Millisecond
	numOrders = 3
	// appScope names the tracer of this program's own spans.
	appScope = "github.com/redelay/redelay/examples/tracing"
)

// Order is the value queued: the order to close if it is still unpaid.
type Order struct {
	ID     string
	Amount int // cents
}

// spanName is the name of redelay's spans of this operation on the queue,
// such as "send orders".
func spanName(operation string) string { return operation + " " + queueName }

var start = time.Now()

// logf prints a line stamped with the time since the program started.
func logf(format string, args ...any) {
	fmt.Printf("[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "tracing:", err)
		os.Exit(1)
	}
}

func run() error {
	spansFile := flag.String("spans", "", "also write every span to this `file`, as JSON, one per line")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	res, err := resource.Merge(resource.Default(),
		resource.NewSchemaless(semconv.ServiceName("redelay-tracing-example")))
	if err != nil {
		return err
	}

	// Traces: every span goes to the exporters asked for (OTLP, a file) and,
	// for the trace tree printed at the end, to an in-memory recorder.
	recorder := tracetest.NewInMemoryExporter()
	tp, closeSpans, err := newTracerProvider(ctx, res, recorder, *spansFile)
	if err != nil {
		return err
	}
	defer closeSpans()
	defer func() { _ = tp.Shutdown(context.Background()) }() // on early returns; flushed below

	// Metrics: a Prometheus registry of our own, served on loopback.
	reg := prometheus.NewRegistry()
	promExporter, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return err
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(promExporter), sdkmetric.WithResource(res))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	metricsURL, stopServing, err := serveMetrics(reg)
	if err != nil {
		return err
	}
	defer stopServing()

	// Trace context travels in each item's headers as a W3C traceparent.
	// redelay, like every otel instrumentation, uses the global propagator
	// unless told otherwise, and the global one is a no-op until set: without
	// this line the consumer's spans would start traces of their own.
	otel.SetTextMapPropagator(propagation.TraceContext{})

	rdb, cleanup, err := connect()
	if err != nil {
		return err
	}
	defer cleanup()
	// go-redis's own instrumentation, next to redelay's: a client span per
	// command or pipeline, a child of the span in the command's context (so
	// the offer's EVALSHA lands under "send orders"). Statements are left out
	// of the spans: they would carry the encoded items. For the client's
	// pool and latency metrics, add redisotel.InstrumentMetrics(rdb,
	// redisotel.WithMeterProvider(mp)).
	if err := redisotel.InstrumentTracing(rdb, redisotel.WithTracerProvider(tp), redisotel.WithDBStatement(false)); err != nil {
		return err
	}

	// The queue gets the providers explicitly; after otel.SetTracerProvider
	// and otel.SetMeterProvider these options could be left out.
	q := blocking.New[Order](rdb, queueName,
		blocking.WithTracerProvider(tp),
		blocking.WithMeterProvider(mp),
		blocking.WithPropagator(otel.GetTextMapPropagator()))
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	tracer := tp.Tracer(appScope)

	// On a shared server, an interrupted earlier run may have left orders in
	// the queue. Each item carries the ID of the run that offered it in a
	// header, so that leftovers are dropped when received.
	runID := fmt.Sprintf("%x", time.Now().UnixNano())

	// The consumer: closes the orders whose time to pay ran out. Its handler
	// gets a context that carries the "process orders" span, so the spans it
	// starts land in the trace of the request that placed the order.
	var closed atomic.Int32
	allClosed := make(chan struct{})
	closeUnpaid := func(ctx context.Context, d *blocking.Delivery[Order]) error {
		o := d.Value
		if d.Headers["demo-run"] != runID {
			logf("%s dropped: left over from an earlier run", o.ID)
			return nil
		}
		ctx, span := tracer.Start(ctx, "close unpaid order", trace.WithAttributes(attribute.String("order.id", o.ID)))
		defer span.End()
		if err := closeOrder(ctx, o); err != nil {
			return err // nacked: retried with backoff
		}
		logf("%s closed: not paid within %v (attempt %d)", o.ID, payWithin, d.Attempt)
		if closed.Add(1) == numOrders {
			close(allClosed)
		}
		return nil
	}
	consumeCtx, stopConsuming := context.WithCancel(ctx)
	defer stopConsuming()
	consumed := make(chan error, 1)
	go func() { consumed <- q.Consume(consumeCtx, closeUnpaid, blocking.WithConcurrency(2)) }()

	// The producer: each order's "HTTP request" offers its timer. The last
	// order's trace is printed at the end: the first one also shows the
	// client's connection handshake and, on a server that has not seen
	// redelay's scripts yet, the EVALSHA that fails with NOSCRIPT and the
	// EVAL that loads the script.
	var last trace.SpanContext // the last order's request span
	var lastID, lastOrder string
	for i := range numOrders {
		o := Order{ID: fmt.Sprintf("order-%d", i+1), Amount: 1990 + 1000*i}
		sc, id, err := placeOrder(ctx, tracer, dq, o, runID)
		if err != nil {
			return err
		}
		logf("%s placed: close it in %v unless paid (item %s, trace %s)", o.ID, payWithin, id, sc.TraceID())
		last, lastID, lastOrder = sc, id, o.ID
		time.Sleep(50 * time.Millisecond)
	}

	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	var waitErr error
	select {
	case <-allClosed:
	case <-timeout.C:
		waitErr = fmt.Errorf("timed out: %d of %d orders closed", closed.Load(), numOrders)
	case <-ctx.Done():
		waitErr = ctx.Err()
	}
	// Consume lets running handlers finish and settles them before it
	// returns, so every ack is counted before the scrape.
	stopConsuming()
	if err := <-consumed; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("consumer stopped: %w", err)
	}
	if waitErr != nil {
		return waitErr
	}

	// What a Prometheus server would see: one scrape, while the queue is
	// still open (the depth gauge goes away with Close).
	metrics, err := scrape(ctx, metricsURL)
	if err != nil {
		return err
	}
	_ = dq.Close()
	_ = q.Close()

	// Every span has ended and is in the recorder (its processor is
	// synchronous), which Shutdown would empty.
	spans := recorder.GetSpans()
	// Flush: the batch span processor writes (or sends) what it holds.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := errors.Join(tp.Shutdown(shutdownCtx), mp.Shutdown(shutdownCtx)); err != nil {
		fmt.Fprintln(os.Stderr, "tracing: flush telemetry:", err) // e.g. no collector: not what this checks
	}

	fmt.Printf("\nmetrics of queue %q scraped from %s\n(histogram buckets, and the messaging_system, messaging_destination_name,\nserver_address, server_port and otel_scope_* labels every sample has, left out):\n", queueName, metricsURL)
	for _, l := range metrics {
		fmt.Println("  " + l)
	}
	metricsErr := checkMetrics(metrics)

	tree := buildTree(spans, last.TraceID())
	fmt.Printf("\ntrace %s of %s:\n", last.TraceID(), lastOrder)
	for _, l := range tree.render() {
		fmt.Println("  " + l)
	}
	treeErr := checkTree(tree, lastID)
	transfers, moved := 0, int64(0)
	for _, s := range spans {
		if s.Name == spanName(tracing.SpanTransfer) {
			transfers++
			moved += intAttr(s.Attributes, tracing.TransferMovedKey)
		}
	}
	fmt.Printf("\n%q: %d span(s), each the root of a trace of its own, %d item(s) moved in all\n", spanName(tracing.SpanTransfer), transfers, moved)
	if transfers == 0 {
		treeErr = errors.Join(treeErr, fmt.Errorf("no %q span", spanName(tracing.SpanTransfer)))
	}
	if err := errors.Join(metricsErr, treeErr); err != nil {
		return fmt.Errorf("unexpected telemetry:\n%w", err)
	}
	fmt.Println("ok: the order's trace runs from the request through the queue to the handler")
	return nil
}

// placeOrder stands in for an HTTP handler: its server span is the parent of
// the queue's "send orders", whose context travels with the item.
func placeOrder(ctx context.Context, tracer trace.Tracer, dq *delayed.Queue[Order], o Order, runID string) (trace.SpanContext, string, error) {
	ctx, span := tracer.Start(ctx, "POST /orders", trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(semconv.HTTPRequestMethodPost, semconv.HTTPRoute("/orders"), attribute.String("order.id", o.ID)))
	defer span.End()
	// ... the order is stored as pending here; then its timer is set:
	id, err := dq.Offer(ctx, o, payWithin, delayed.WithHeaders(map[string]string{"demo-run": runID}))
	if err != nil {
		span.RecordError(err)
		span.SetAttributes(semconv.HTTPResponseStatusCode(http.StatusInternalServerError))
		return span.SpanContext(), "", err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(http.StatusCreated))
	return span.SpanContext(), id, nil
}

// closeOrder stands in for the update that closes an unpaid order.
func closeOrder(ctx context.Context, o Order) error {
	select {
	case <-time.After(5 * time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newTracerProvider records every span in recorder, and exports them to the
// OTLP/HTTP collector named by OTEL_EXPORTER_OTLP_ENDPOINT when it is set
// and to spansFile when it is not empty. closeFile closes that file; call it
// after the provider's Shutdown.
func newTracerProvider(ctx context.Context, res *resource.Resource, recorder sdktrace.SpanExporter, spansFile string) (tp *sdktrace.TracerProvider, closeFile func(), err error) {
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(noLoneCommands{})),
		sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(recorder)),
	}
	closeFile = func() {}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		exporter, err := otlptracehttp.New(ctx) // reads the OTEL_EXPORTER_OTLP_* variables
		if err != nil {
			return nil, nil, fmt.Errorf("trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exporter))
	}
	if spansFile != "" {
		f, err := os.Create(spansFile)
		if err != nil {
			return nil, nil, fmt.Errorf("spans file: %w", err)
		}
		// One JSON object per span; stdouttrace.WithPrettyPrint() spreads
		// each over some 80 lines instead.
		exporter, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			_ = f.Close()
			return nil, nil, fmt.Errorf("trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exporter))
		closeFile = func() { _ = f.Close() }
	}
	return sdktrace.NewTracerProvider(opts...), closeFile, nil
}

// noLoneCommands samples every trace except those that would hold nothing
// but one Redis command: the consumer's receives and acks and the
// transfer's moves, many a second, run outside any span. Commands issued
// inside a span (the offer's EVALSHA) follow their parent, and the
// transfer's own span is kept.
type noLoneCommands struct{}

func (noLoneCommands) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	ts := trace.SpanContextFromContext(p.ParentContext).TraceState()
	if p.Kind == trace.SpanKindClient {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: ts}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: ts}
}

func (noLoneCommands) Description() string { return "NoLoneCommands" }

// serveMetrics serves reg at http://$METRICS_ADDR/metrics, by default on
// 127.0.0.1:2112 (or, if that port is taken, any free loopback port).
func serveMetrics(reg *prometheus.Registry) (url string, stop func(), err error) {
	addr := os.Getenv("METRICS_ADDR")
	ln, err := net.Listen("tcp", cmpOr(addr, "127.0.0.1:2112"))
	if err != nil && addr == "" {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		return "", nil, fmt.Errorf("metrics endpoint: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	url = "http://" + ln.Addr().String() + "/metrics"
	logf("metrics at %s", url)
	return url, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// scrape GETs the metrics endpoint once and returns the samples of the
// queue's metrics (redelay_* and messaging_*), histogram buckets left out,
// without the labels every one of them has (commonLabels), values aligned.
func scrape(ctx context.Context, url string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape: %s", resp.Status)
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		name, _, _ := strings.Cut(l, "{")
		name, _, _ = strings.Cut(name, " ")
		if !strings.HasPrefix(name, "redelay_") && !strings.HasPrefix(name, "messaging_") {
			continue
		}
		if strings.HasSuffix(name, "_bucket") || !strings.Contains(l, fmt.Sprintf("messaging_destination_name=%q", queueName)) {
			continue
		}
		l = commonLabels.ReplaceAllString(l, "")
		l = strings.Replace(strings.Replace(l, "{,", "{", 1), "{}", "", 1)
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	// Values in a column.
	width := 0
	for _, l := range lines {
		width = max(width, strings.LastIndexByte(l, ' '))
	}
	for i, l := range lines {
		j := strings.LastIndexByte(l, ' ')
		lines[i] = l[:j] + strings.Repeat(" ", width-j) + l[j:]
	}
	return lines, nil
}

// commonLabels matches the labels every sample of the queue has: the
// otel_scope_* labels the exporter adds, messaging.system,
// messaging.destination.name, server.address and server.port.
var commonLabels = regexp.MustCompile(`,?(otel_scope_\w+|messaging_system|messaging_destination_name|server_address|server_port)="[^"]*"`)

// checkMetrics reports the metrics that a run like this one must produce
// but that the scrape did not show.
func checkMetrics(lines []string) error {
	want := []string{
		"messaging_client_sent_messages_total",
		"messaging_client_consumed_messages_total",
		"messaging_client_operation_duration_seconds_count",
		"redelay_messages_acked_total",
		"messaging_process_duration_seconds_count",
		"redelay_lateness_seconds_count",
		"redelay_queue_depth",
		"redelay_queue_latency_seconds",
		"redelay_queue_paused",
		"redelay_transfer_batch_size_count",
	}
	var errs []error
	for _, w := range want {
		if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, w+"{") || strings.HasPrefix(l, w+" ") }) {
			errs = append(errs, fmt.Errorf("metric %s missing", w))
		}
	}
	return errors.Join(errs...)
}

// node is a span of the trace tree with its children in start order.
type node struct {
	span     tracetest.SpanStub
	children []*node
}

// buildTree returns the root of the trace's spans, linked by parent span ID
// (nil if the trace has no root span).
func buildTree(spans tracetest.SpanStubs, id trace.TraceID) *node {
	byID := map[trace.SpanID]*node{}
	var inTrace []*node
	for _, s := range spans {
		if s.SpanContext.TraceID() == id {
			n := &node{span: s}
			byID[s.SpanContext.SpanID()] = n
			inTrace = append(inTrace, n)
		}
	}
	var root *node
	for _, n := range inTrace {
		if p, ok := byID[n.span.Parent.SpanID()]; ok && n.span.Parent.IsValid() {
			p.children = append(p.children, n)
		} else if root == nil || n.span.StartTime.Before(root.span.StartTime) {
			root = n
		}
	}
	for _, n := range inTrace {
		slices.SortFunc(n.children, func(a, b *node) int { return a.span.StartTime.Compare(b.span.StartTime) })
	}
	return root
}

// render draws the tree, one span a line: name, kind, start relative to
// the root's, duration.
func (root *node) render() []string {
	if root == nil {
		return []string{"(no root span)"}
	}
	type row struct {
		label string
		s     tracetest.SpanStub
	}
	var rows []row
	var walk func(n *node, prefix, connector string)
	walk = func(n *node, prefix, connector string) {
		rows = append(rows, row{prefix + connector + n.span.Name, n.span})
		childPrefix := prefix
		switch connector {
		case "├─ ":
			childPrefix += "│  "
		case "└─ ":
			childPrefix += "   "
		}
		for i, c := range n.children {
			walk(c, childPrefix, map[bool]string{true: "└─ ", false: "├─ "}[i == len(n.children)-1])
		}
	}
	walk(root, "", "")
	width := 0
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r.label))
	}
	t0 := root.span.StartTime
	lines := make([]string, len(rows))
	for i, r := range rows {
		pad := strings.Repeat(" ", width-utf8.RuneCountInString(r.label))
		lines[i] = fmt.Sprintf("%s%s  %-8s at %+7.1fms  took %5.1fms", r.label, pad, strings.ToLower(r.s.SpanKind.String()),
			ms(r.s.StartTime.Sub(t0)), ms(r.s.EndTime.Sub(r.s.StartTime)))
	}
	return lines
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// checkTree checks the trace of one order against what redelay promises:
//
//	POST /orders (server)
//	└─ send orders (producer, the item's ID, its delay)
//	   └─ process orders (consumer, the same ID, a link to "send orders")
//	      ├─ close unpaid order
//	      └─ ack orders (client, the same ID)
//
// besides which it allows only Redis command spans (client).
func checkTree(root *node, itemID string) error {
	if root == nil {
		return errors.New("the order's trace has no root span")
	}
	var errs []error
	expect := func(cond bool, format string, args ...any) {
		if !cond {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	// one returns the only child called name, reporting any other child
	// that is not a Redis command (or one of the allowed extras).
	one := func(parent *node, name string, kind trace.SpanKind, allowed ...string) *node {
		if parent == nil {
			return nil
		}
		var found *node
		for _, c := range parent.children {
			switch {
			case c.span.Name == name && found == nil:
				found = c
			case c.span.SpanKind == trace.SpanKindClient && c.span.InstrumentationScope.Name != tracing.ScopeName:
				// a Redis command
			case slices.Contains(allowed, c.span.Name):
			default:
				errs = append(errs, fmt.Errorf("unexpected span %q under %q", c.span.Name, parent.span.Name))
			}
		}
		if found == nil {
			errs = append(errs, fmt.Errorf("no %q span under %q", name, parent.span.Name))
			return nil
		}
		expect(found.span.SpanKind == kind, "%q is %v, want %v", name, found.span.SpanKind, kind)
		return found
	}

	expect(root.span.Name == "POST /orders", "the trace's root is %q, want \"POST /orders\"", root.span.Name)
	send := one(root, spanName(tracing.SpanSend), trace.SpanKindProducer)
	process := one(send, spanName(tracing.SpanProcess), trace.SpanKindConsumer)
	one(process, "close unpaid order", trace.SpanKindInternal, spanName(tracing.SpanAck))
	ack := one(process, spanName(tracing.SpanAck), trace.SpanKindClient, "close unpaid order")
	if send != nil {
		expect(stringAttr(send.span.Attributes, semconv.MessagingMessageIDKey) == itemID,
			"%q has message ID %q, want %q", send.span.Name, stringAttr(send.span.Attributes, semconv.MessagingMessageIDKey), itemID)
		expect(intAttr(send.span.Attributes, tracing.DelayKey) == payWithin.Milliseconds(),
			"%q has %s %d, want %d", send.span.Name, tracing.DelayKey, intAttr(send.span.Attributes, tracing.DelayKey), payWithin.Milliseconds())
	}
	for _, n := range []*node{process, ack} {
		if n == nil {
			continue
		}
		expect(stringAttr(n.span.Attributes, semconv.MessagingMessageIDKey) == itemID,
			"%q has message ID %q, want %q", n.span.Name, stringAttr(n.span.Attributes, semconv.MessagingMessageIDKey), itemID)
		expect(send != nil && len(n.span.Links) == 1 && n.span.Links[0].SpanContext.SpanID() == send.span.SpanContext.SpanID(),
			"%q does not link the item's creation context (%q)", n.span.Name, spanName(tracing.SpanSend))
	}
	return errors.Join(errs...)
}

func stringAttr(attrs []attribute.KeyValue, k attribute.Key) string {
	for _, a := range attrs {
		if a.Key == k {
			return a.Value.Emit()
		}
	}
	return ""
}

func intAttr(attrs []attribute.KeyValue, k attribute.Key) int64 {
	for _, a := range attrs {
		if a.Key == k {
			return a.Value.AsInt64()
		}
	}
	return 0
}

// connect returns a client to the Redis server at $REDIS_ADDR (host:port),
// after checking that it answers. With REDIS_ADDR unset it starts an
// embedded miniredis on a loopback port instead, so that the example runs on
// a machine with no Redis server, and says so on standard error. cleanup
// closes the client and stops the embedded server, if any.
func connect() (rdb *redis.Client, cleanup func(), err error) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded miniredis: %w", err)
		}
		fmt.Fprintf(os.Stderr, "REDIS_ADDR not set: using an embedded miniredis at %s\n", mr.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		return rdb, func() { _ = rdb.Close(); mr.Close() }, nil
	}
	rdb = redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	return rdb, func() { _ = rdb.Close() }, nil
}
