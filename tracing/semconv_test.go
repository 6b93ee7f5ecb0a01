package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/tracing"
)

// The tables below are the OpenTelemetry semantic conventions v1.43.0
// (docs/messaging/messaging-spans.md and messaging-metrics.md of that
// release), written out for redelay's operations; the test compares what a
// live queue emits against them, attribute by attribute.

// semconvSchema is the schema URL of semconv v1.43.0: the instrumentation
// scope says which version its telemetry follows.
const semconvSchema = "https://opentelemetry.io/schemas/1.43.0"

// Attribute keys of the conventions.
const (
	kOpName    = attribute.Key("messaging.operation.name")   // Required
	kSystem    = attribute.Key("messaging.system")           // Required
	kDest      = attribute.Key("messaging.destination.name") // Conditionally required: single destination, low cardinality
	kOpType    = attribute.Key("messaging.operation.type")   // Conditionally required: if applicable
	kAddr      = attribute.Key("server.address")             // Conditionally required: if available
	kErrorType = attribute.Key("error.type")                 // Conditionally required: iff the operation failed
	kPort      = attribute.Key("server.port")                // Recommended
	kMsgID     = attribute.Key("messaging.message.id")       // Recommended: an operation on a single message
	kBatch     = attribute.Key("messaging.batch.message_count")
)

// spanRow is one operation's span: "Span kind" table (create/send
// PRODUCER when its context is the creation context, receive CLIENT,
// process CONSUMER, settle CLIENT), its messaging.operation.type, whether
// it links to its message's creation context ("For each message it
// accounts for, the Process or Receive span SHOULD link to the message's
// creation context"; a Settle span MAY: redelay's do), and the attributes
// of redelay's own it carries besides the conventions'.
type spanRow struct {
	kind   trace.SpanKind
	opType string
	link   bool
	own    []attribute.Key
}

var spanTable = map[string]spanRow{ // by messaging.operation.name
	"send":        {kind: trace.SpanKindProducer, opType: "send", own: []attribute.Key{"redelay.delay_ms"}},
	"receive":     {kind: trace.SpanKindClient, opType: "receive", link: true, own: []attribute.Key{"redelay.attempt"}},
	"process":     {kind: trace.SpanKindConsumer, opType: "process", link: true, own: []attribute.Key{"redelay.attempt"}},
	"ack":         {kind: trace.SpanKindClient, opType: "settle", link: true},
	"nack":        {kind: trace.SpanKindClient, opType: "settle", link: true, own: []attribute.Key{"redelay.dead_lettered"}},
	"dead_letter": {kind: trace.SpanKindClient, opType: "settle", link: true, own: []attribute.Key{"redelay.dead_lettered"}},
}

// metricRow is one metric: instrument, unit, and the attributes its table
// lists (Required: messaging.operation.name, messaging.system;
// Conditionally required: messaging.destination.name, server.address,
// error.type iff failed, and messaging.operation.type for the operation
// duration; Recommended: server.port). redelay's own metrics (redelay.*)
// carry messaging.system, messaging.destination.name and server.* and
// the keys listed in own.
type metricRow struct {
	data   string // "sum", "histogram", "gauge"
	unit   string
	semcon bool // a metric of the conventions: messaging.operation.name required
	opType bool // messaging.operation.type is in its table
	own    []attribute.Key
}

var metricTable = map[string]metricRow{
	"messaging.client.sent.messages":      {data: "sum", unit: "{message}", semcon: true},
	"messaging.client.consumed.messages":  {data: "sum", unit: "{message}", semcon: true},
	"messaging.client.operation.duration": {data: "histogram", unit: "s", semcon: true, opType: true},
	"messaging.process.duration":          {data: "histogram", unit: "s", semcon: true},
	"redelay.messages.acked":              {data: "sum", unit: "{message}"},
	"redelay.messages.nacked":             {data: "sum", unit: "{message}"},
	"redelay.messages.dead_lettered":      {data: "sum", unit: "{message}"},
	"redelay.lateness":                    {data: "histogram", unit: "s"},
	"redelay.transfer.batch.size":         {data: "histogram", unit: "{message}"},
	"redelay.queue.depth":                 {data: "gauge", unit: "{message}", own: []attribute.Key{"redelay.queue.state"}},
	"redelay.queue.latency":               {data: "gauge", unit: "s"},
	"redelay.queue.paused":                {data: "gauge", unit: "{queue}"},
	"redelay.messages.dead_dropped":       {data: "sum", unit: "{message}"},
	"redelay.redis.eviction":              {data: "gauge", own: []attribute.Key{"redelay.redis.maxmemory_policy"}},
}

// handlerError is the error the test's handler fails with; error.type is
// its type's canonical name.
type handlerError struct{ msg string }

func (e handlerError) Error() string { return e.msg }

const handlerErrorType = "github.com/redelay/redelay/tracing_test.handlerError"

// serverOf is the server.address and server.port the conventions ask for:
// the broker's address as the client was configured with it (no DNS
// lookup); for a Cluster, the first address the client was given, which
// names the cluster (the node that serves a queue changes with its slot).
func serverOf(t *testing.T, rdb redis.UniversalClient) (string, int) {
	t.Helper()
	var addr string
	switch c := rdb.(type) {
	case *redis.Client:
		addr = c.Options().Addr
	case *redis.ClusterClient:
		addr = c.Options().Addrs[0]
	default:
		t.Fatalf("client %T", rdb)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return host, p
}

// TestSemanticConventions runs a queue through every messaging operation
// it has: a delayed offer received and acked by hand, and, in Consume, a
// handler that fails twice (a retry, then the dead letters on the last
// attempt), one that asks for the dead letters at once (SkipRetry) and one
// that succeeds. Every span and metric the queue emitted must match the
// tables above: name, kind, links, parent, and every attribute.
func TestSemanticConventions(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		b, opts := setup(t)
		name := redistest.QueueName(t)
		addr, port := serverOf(t, rdb)
		q := blocking.New[string](rdb, name, append(opts, blocking.WithMaxAttempts(2))...)
		defer q.Close()
		dq := delayed.New(q)
		defer dq.Close()
		ctx := context.Background()
		tracer := b.tp.Tracer("test")

		// A: offered with a delay in a request's trace, received and acked
		// by a consumer loop with a span of its own.
		reqCtx, req := tracer.Start(ctx, "request")
		idA, err := dq.Offer(reqCtx, "A", 30*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		loopCtx, loop := tracer.Start(ctx, "consumer loop")
		d, err := q.Receive(loopCtx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Ack(loopCtx); err != nil {
			t.Fatal(err)
		}
		loop.End()
		// F, S and K, for Consume: F fails, S asks for the dead letters, K
		// succeeds.
		ids := map[string]string{"A": idA}
		for _, v := range []string{"F", "S", "K"} {
			if ids[v], err = q.Offer(reqCtx, v); err != nil {
				t.Fatal(err)
			}
		}
		req.End()

		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- q.Consume(cctx, func(ctx context.Context, d *blocking.Delivery[string]) error {
				switch d.Value {
				case "F":
					return handlerError{fmt.Sprintf("attempt %d failed", d.Attempt)}
				case "S":
					return blocking.SkipRetry(handlerError{"no use retrying"})
				}
				return nil
			}, blocking.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond }))
		}()
		redistest.WaitFor(t, 10*time.Second, "F and S dead-lettered, K acked", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Dead == 2 && st.Ready == 0 && st.Retry == 0 && st.Inflight == 0 && st.Delayed == 0
		})
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Consume = %v", err)
		}
		redistest.WaitFor(t, 5*time.Second, "a transfer span", func() bool { return len(b.find(t, "transfer "+name)) > 0 })

		// Spans.
		var spans []sdktrace.ReadOnlySpan
		for _, s := range b.spans.Ended() {
			if s.InstrumentationScope().Name == tracing.ScopeName {
				spans = append(spans, s)
			}
		}
		sends := map[string]sdktrace.ReadOnlySpan{} // creation contexts, by message ID
		for _, s := range spans {
			if s.Name() == "send "+name {
				v, _ := attr(s, string(kMsgID))
				sends[v.AsString()] = s
			}
		}
		byID := map[string]string{}
		for v, id := range ids {
			byID[id] = v
		}
		count := map[string]int{}        // spans by operation name
		process := map[string][]string{} // span IDs of the process spans, by item
		var settles []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.InstrumentationScope().SchemaURL != semconvSchema {
				t.Errorf("span %q: scope schema URL %q, want %q", s.Name(), s.InstrumentationScope().SchemaURL, semconvSchema)
			}
			if s.Name() == "transfer "+name {
				checkTransferSpan(t, s, name, addr, port)
				continue
			}
			op, dest, _ := strings.Cut(s.Name(), " ")
			row, ok := spanTable[op]
			if !ok || dest != name {
				t.Errorf("span %q (%v): no such operation in the table", s.Name(), s.SpanKind())
				continue
			}
			count[op]++
			if s.SpanKind() != row.kind {
				t.Errorf("span %q: kind %v, want %v", s.Name(), s.SpanKind(), row.kind)
			}
			msgID, _ := attr(s, string(kMsgID))
			item := byID[msgID.AsString()]
			want := map[attribute.Key]any{
				kOpName: op, kSystem: tracing.System, kDest: name, kOpType: row.opType,
				kAddr: addr, kPort: int64(port), kMsgID: ids[item],
			}
			failed := s.Status().Code == codes.Error
			if failed {
				want[kErrorType] = handlerErrorType
			}
			checkAttrs(t, "span "+s.Name()+" of "+item, s.Attributes(), want, row.own)
			if item == "" {
				t.Errorf("span %q: message ID %q is none of the items offered", s.Name(), msgID.AsString())
				continue
			}
			send := sends[ids[item]]
			if send == nil {
				t.Errorf("span %q of %s: no send span", s.Name(), item)
				continue
			}
			links := s.Links()
			if row.link && (len(links) != 1 || links[0].SpanContext.SpanID() != send.SpanContext().SpanID()) {
				t.Errorf("span %q of %s: links %v, want one, to the creation context (its send span %v)", s.Name(), item, linkIDs(links), send.SpanContext().SpanID())
			}
			if !row.link && len(links) != 0 {
				t.Errorf("span %q of %s: links %v, want none", s.Name(), item, linkIDs(links))
			}
			switch op {
			case "send":
				if s.Parent().SpanID() != req.SpanContext().SpanID() {
					t.Errorf("span %q of %s: parent %v, want the request's span", s.Name(), item, s.Parent().SpanID())
				}
				if delay, _ := attr(s, "redelay.delay_ms"); item == "A" && delay.AsInt64() != 30 {
					t.Errorf("span %q of A: redelay.delay_ms %d, want 30", s.Name(), delay.AsInt64())
				}
			case "receive":
				if s.Parent().SpanID() != loop.SpanContext().SpanID() {
					t.Errorf("span %q of %s: parent %v, want the consumer loop's span (the caller's context)", s.Name(), item, s.Parent().SpanID())
				}
			case "process":
				// Single message and no ambient span: the creation context
				// is the parent ("MAY", and documented).
				if s.Parent().SpanID() != send.SpanContext().SpanID() {
					t.Errorf("span %q of %s: parent %v, want its send span", s.Name(), item, s.Parent().SpanID())
				}
				if failed != (item == "F" || item == "S") {
					t.Errorf("span %q of %s: status %v", s.Name(), item, s.Status())
				}
				process[item] = append(process[item], s.SpanContext().SpanID().String())
			default:
				if failed {
					t.Errorf("span %q of %s: status %v, want a successful settlement", s.Name(), item, s.Status())
				}
				settles = append(settles, s)
			}
		}
		wantCount := map[string]int{"send": 4, "receive": 1, "process": 4, "ack": 2, "nack": 2, "dead_letter": 1}
		if !maps.Equal(count, wantCount) {
			t.Errorf("spans by operation %v, want %v", count, wantCount)
		}
		// Which settlement each item had, and under which span.
		settled := map[string][]string{}
		for _, s := range settles {
			op, _, _ := strings.Cut(s.Name(), " ")
			msgID, _ := attr(s, string(kMsgID))
			item := byID[msgID.AsString()]
			dead, _ := attr(s, "redelay.dead_lettered")
			desc := op
			if dead.AsBool() {
				desc += "(dead)"
			}
			settled[item] = append(settled[item], desc)
			switch {
			case item == "A":
				if s.Parent().SpanID() != loop.SpanContext().SpanID() {
					t.Errorf("span %q of A: parent %v, want the consumer loop's span", s.Name(), s.Parent().SpanID())
				}
			case !slices.Contains(process[item], s.Parent().SpanID().String()):
				t.Errorf("span %q of %s: parent %v, want one of its process spans %v", s.Name(), item, s.Parent().SpanID(), process[item])
			}
		}
		for item, want := range map[string][]string{"A": {"ack"}, "F": {"nack", "nack(dead)"}, "S": {"dead_letter(dead)"}, "K": {"ack"}} {
			got := settled[item]
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("settle spans of %s: %v, want %v", item, got, want)
			}
		}

		// Metrics.
		var rm metricdata.ResourceMetrics
		if err := b.reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{} // "metric/op name[/error.type]": count, or value for gauges
		for _, sm := range rm.ScopeMetrics {
			if sm.Scope.Name != tracing.ScopeName {
				continue
			}
			if sm.Scope.SchemaURL != semconvSchema {
				t.Errorf("meter scope schema URL %q, want %q", sm.Scope.SchemaURL, semconvSchema)
			}
			for _, m := range sm.Metrics {
				checkMetric(t, m, name, addr, port, got)
			}
		}
		wantMetrics := map[string]int64{
			"messaging.client.sent.messages/send":                    4,
			"messaging.client.consumed.messages/receive":             5,
			"messaging.client.operation.duration/send":               4,
			"messaging.client.operation.duration/receive":            1,
			"messaging.client.operation.duration/ack":                2,
			"messaging.client.operation.duration/nack":               2,
			"messaging.client.operation.duration/dead_letter":        1,
			"messaging.process.duration/process":                     1,
			"messaging.process.duration/process/" + handlerErrorType: 3,
			"redelay.messages.acked":                                 2,
			"redelay.messages.nacked":                                1,
			"redelay.messages.dead_lettered":                         2,
			"redelay.lateness":                                       5,
			"redelay.queue.depth/delayed":                            0,
			"redelay.queue.depth/retry":                              0,
			"redelay.queue.depth/ready":                              0,
			"redelay.queue.depth/inflight":                           0,
			"redelay.queue.depth/dead":                               2,
			"redelay.queue.latency":                                  0,
			"redelay.queue.paused":                                   0,
			"redelay.messages.dead_dropped":                          0, // no bounds
			"redelay.redis.eviction":                                 0,
		}
		batches := got["redelay.transfer.batch.size"]
		delete(got, "redelay.transfer.batch.size")
		if batches < 1 {
			t.Errorf("redelay.transfer.batch.size: %d samples, want at least 1", batches)
		}
		if !maps.Equal(got, wantMetrics) {
			for _, k := range sortedKeys(got, wantMetrics) {
				if g, w := got[k], wantMetrics[k]; g != w {
					t.Errorf("%s = %d, want %d", k, g, w)
				}
			}
		}
	})
}

// checkTransferSpan checks a transfer span: redelay's own (no messaging
// operation: it moves due items inside the broker), INTERNAL, the root of a
// trace of its own.
func checkTransferSpan(t *testing.T, s sdktrace.ReadOnlySpan, name, addr string, port int) {
	t.Helper()
	if s.SpanKind() != trace.SpanKindInternal || s.Parent().IsValid() || len(s.Links()) != 0 {
		t.Errorf("span %q: kind %v, parent %v, %d links; want INTERNAL, a root, no links", s.Name(), s.SpanKind(), s.Parent().SpanID(), len(s.Links()))
	}
	checkAttrs(t, "span "+s.Name(), s.Attributes(),
		map[attribute.Key]any{kSystem: tracing.System, kDest: name, kAddr: addr, kPort: int64(port)},
		[]attribute.Key{"redelay.transfer.moved"})
}

// checkAttrs compares attrs with want (key: value) plus the keys of own
// (any value), and reports what is missing, different or not in the table.
func checkAttrs(t *testing.T, what string, attrs []attribute.KeyValue, want map[attribute.Key]any, own []attribute.Key) {
	t.Helper()
	seen := map[attribute.Key]bool{}
	for _, kv := range attrs {
		seen[kv.Key] = true
		w, ok := want[kv.Key]
		switch {
		case ok:
			if kv.Value.AsInterface() != w {
				t.Errorf("%s: %s = %v, want %v", what, kv.Key, kv.Value.AsInterface(), w)
			}
		case slices.Contains(own, kv.Key):
		case kv.Key == kBatch:
			t.Errorf("%s: %s on a single-message operation", what, kv.Key)
		default:
			t.Errorf("%s: attribute %s = %v is not in the table", what, kv.Key, kv.Value.AsInterface())
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("%s: no %s (want %v)", what, k, want[k])
		}
	}
	for _, k := range own {
		if !seen[k] {
			t.Errorf("%s: no %s", what, k)
		}
	}
}

// checkMetric checks m against metricTable and adds its points to got:
// "name[/operation[/error.type]]" or, for the depth, "name/state".
func checkMetric(t *testing.T, m metricdata.Metrics, name, addr string, port int, got map[string]int64) {
	t.Helper()
	row, ok := metricTable[m.Name]
	if !ok {
		t.Errorf("metric %q: not in the table", m.Name)
		return
	}
	if m.Unit != row.unit {
		t.Errorf("metric %s: unit %q, want %q", m.Name, m.Unit, row.unit)
	}
	type point struct {
		attrs attribute.Set
		n     int64
	}
	var points []point
	var data string
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		data = "sum"
		if !d.IsMonotonic {
			data = "updowncounter"
		}
		for _, p := range d.DataPoints {
			points = append(points, point{p.Attributes, p.Value})
		}
	case metricdata.Histogram[float64]:
		data = "histogram"
		for _, p := range d.DataPoints {
			points = append(points, point{p.Attributes, int64(p.Count)})
		}
	case metricdata.Histogram[int64]:
		data = "histogram"
		for _, p := range d.DataPoints {
			points = append(points, point{p.Attributes, int64(p.Count)})
		}
	case metricdata.Gauge[int64]:
		data = "gauge"
		for _, p := range d.DataPoints {
			points = append(points, point{p.Attributes, p.Value})
		}
	case metricdata.Gauge[float64]:
		data = "gauge"
		for _, p := range d.DataPoints {
			points = append(points, point{p.Attributes, int64(p.Value * 1000)}) // ms
		}
	default:
		data = fmt.Sprintf("%T", m.Data)
	}
	if data != row.data {
		t.Errorf("metric %s: %s, want %s", m.Name, data, row.data)
	}
	for _, p := range points {
		want := map[attribute.Key]any{kSystem: tracing.System, kDest: name, kAddr: addr, kPort: int64(port)}
		key := m.Name
		opName, hasOp := p.attrs.Value(kOpName)
		if row.semcon {
			if !hasOp {
				t.Errorf("metric %s: no %s (Required)", m.Name, kOpName)
			}
			want[kOpName] = opName.AsString()
			key += "/" + opName.AsString()
			if row.opType {
				want[kOpType] = spanTable[opName.AsString()].opType
			}
		}
		if e, ok := p.attrs.Value(kErrorType); ok {
			want[kErrorType] = e.AsString()
			key += "/" + e.AsString()
		}
		if s, ok := p.attrs.Value("redelay.queue.state"); ok {
			key += "/" + s.AsString()
		}
		checkAttrs(t, "metric "+m.Name+" point "+key, p.attrs.ToSlice(), want, row.own)
		got[key] += p.n
	}
}

func linkIDs(links []sdktrace.Link) []string {
	out := make([]string, len(links))
	for i, l := range links {
		out[i] = l.SpanContext.SpanID().String()
	}
	return out
}

func sortedKeys(a, b map[string]int64) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// TestQueueGauges: the latency and pause flag Stats reports are exported as
// gauges beside the depth, all three from one stats call per collection.
func TestQueueGauges(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		b, opts := setup(t)
		client := redistest.NewClientLike(t, rdb)
		calls := redistest.CountScript(client, lua.Stats)
		name := redistest.QueueName(t)
		q := blocking.New[string](client, name, opts...)
		defer q.Close()
		ctx := context.Background()

		offered := time.Now()
		for i := range 3 {
			if _, err := q.Offer(ctx, strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		// A consuming call registers the gauges (the queue now consumes in
		// this process); paused, a Poll with no timeout returns at once.
		if _, ok, err := q.Poll(ctx, 0); err != nil || ok {
			t.Fatalf("Poll of a paused queue = %v, %v", ok, err)
		}
		const waited = 60 * time.Millisecond
		time.Sleep(waited) // the premise: the oldest ready item has waited this long at least

		gauges := func() map[string]float64 {
			t.Helper()
			before := calls.Load()
			var rm metricdata.ResourceMetrics
			if err := b.reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			if n := calls.Load() - before; n != 1 {
				t.Errorf("one collection ran the stats script %d times, want 1", n)
			}
			out := map[string]float64{}
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					switch d := m.Data.(type) {
					case metricdata.Gauge[int64]:
						for _, p := range d.DataPoints {
							s, _ := p.Attributes.Value("redelay.queue.state")
							out[strings.TrimSuffix(m.Name+"/"+s.AsString(), "/")] = float64(p.Value)
						}
					case metricdata.Gauge[float64]:
						for _, p := range d.DataPoints {
							out[m.Name] = p.Value
						}
					}
				}
			}
			return out
		}
		g := gauges()
		elapsed := time.Since(offered)
		if g["redelay.queue.depth/ready"] != 3 || g["redelay.queue.paused"] != 1 {
			t.Errorf("paused with 3 ready: depth ready %v, paused %v; want 3 and 1 (all: %v)", g["redelay.queue.depth/ready"], g["redelay.queue.paused"], g)
		}
		// Due times are stored in milliseconds: allow one either way.
		if lat, ok := g["redelay.queue.latency"]; !ok || lat < (waited-time.Millisecond).Seconds() || lat > (elapsed+time.Millisecond).Seconds() {
			t.Errorf("redelay.queue.latency = %v s (present %v), want between %v and %v", lat, ok, waited, elapsed)
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Latency < waited-time.Millisecond {
			t.Errorf("Stats.Latency %v, want at least %v: the gauge reports what Stats does", st.Latency, waited)
		}

		if err := q.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := q.Take(ctx); err != nil {
				t.Fatal(err)
			}
		}
		g = gauges()
		if g["redelay.queue.depth/ready"] != 0 || g["redelay.queue.paused"] != 0 || g["redelay.queue.latency"] != 0 {
			t.Errorf("resumed and emptied: depth ready %v, paused %v, latency %v; want 0, 0, 0", g["redelay.queue.depth/ready"], g["redelay.queue.paused"], g["redelay.queue.latency"])
		}
		if _, ok := g["redelay.queue.paused"]; !ok {
			t.Error("no redelay.queue.paused")
		}

		// Closed, the queue reports nothing and reads nothing.
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		before := calls.Load()
		var rm metricdata.ResourceMetrics
		if err := b.reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		if n := calls.Load() - before; n != 0 {
			t.Errorf("a collection after Close ran the stats script %d times", n)
		}
	})
}

// TestBatchSemanticConventions: the batch calls make one span for the
// batch, with messaging.batch.message_count and no message ID ("SHOULD use
// messaging.batch.message_count for batching APIs"), and a receive span
// links every item's creation context.
func TestBatchSemanticConventions(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		b, opts := setup(t)
		name := redistest.QueueName(t)
		addr, port := serverOf(t, rdb)
		q := blocking.New[string](rdb, name, opts...)
		defer q.Close()
		dq := delayed.New(q)
		defer dq.Close()
		ctx := context.Background()

		if _, err := dq.OfferBatch(ctx, []string{"a", "b", "c"}, 0); err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"d", "e", "f"} {
			if _, err := q.Offer(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		var taken []string
		for len(taken) < 3 {
			vs, err := q.TakeBatch(ctx, 3-len(taken))
			if err != nil {
				t.Fatal(err)
			}
			taken = append(taken, vs...)
		}
		var ds []*blocking.Delivery[string]
		for len(ds) < 3 {
			got, err := q.ReceiveBatch(ctx, 3-len(ds))
			if err != nil {
				t.Fatal(err)
			}
			ds = append(ds, got...)
		}
		for _, d := range ds {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}

		sends := map[trace.SpanID]bool{}
		var batchSend trace.SpanID
		for _, s := range b.find(t, "send "+name) {
			sends[s.SpanContext().SpanID()] = true
			want := map[attribute.Key]any{
				kOpName: "send", kSystem: tracing.System, kDest: name, kOpType: "send", kAddr: addr, kPort: int64(port),
			}
			if n, ok := attr(s, string(kBatch)); ok {
				batchSend = s.SpanContext().SpanID()
				if n.AsInt64() != 3 {
					t.Errorf("OfferBatch's span: %s %d, want 3", kBatch, n.AsInt64())
				}
				checkAttrs(t, "OfferBatch's span", s.Attributes(), want, []attribute.Key{kBatch, "redelay.delay_ms"})
				continue
			}
			id, _ := attr(s, string(kMsgID))
			want[kMsgID] = id.AsString()
			checkAttrs(t, "Offer's span", s.Attributes(), want, []attribute.Key{"redelay.delay_ms"})
		}
		if len(sends) != 4 || !batchSend.IsValid() {
			t.Fatalf("%d send spans (batch one %v), want 4: the batch's and one per Offer", len(sends), batchSend)
		}
		recvs := b.find(t, "receive "+name)
		var items int64
		for _, s := range recvs {
			n, _ := attr(s, string(kBatch))
			items += n.AsInt64()
			checkAttrs(t, "batch receive span", s.Attributes(), map[attribute.Key]any{
				kOpName: "receive", kSystem: tracing.System, kDest: name, kOpType: "receive", kAddr: addr, kPort: int64(port),
			}, []attribute.Key{kBatch})
			if s.SpanKind() != trace.SpanKindClient || int64(len(s.Links())) != n.AsInt64() {
				t.Errorf("batch receive span: kind %v, %d links; want CLIENT, one per item (%d)", s.SpanKind(), len(s.Links()), n.AsInt64())
			}
			for _, l := range s.Links() {
				if !sends[l.SpanContext.SpanID()] {
					t.Errorf("batch receive span links %v, not a send span", l.SpanContext.SpanID())
				}
			}
		}
		if items != 6 {
			t.Errorf("the receive spans account for %d items, want 6 (%d spans)", items, len(recvs))
		}
		if acks := b.find(t, "ack "+name); len(acks) != 3 {
			t.Errorf("%d ack spans, want one per Ack", len(acks))
		}
	})
}
