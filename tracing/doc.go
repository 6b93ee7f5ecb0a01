// Package tracing names redelay's OpenTelemetry instrumentation: spans that
// follow an item from the request that offered it to the handler that
// processed it, and metrics for throughput, lateness and queue state. It
// exports the scope name, the attribute keys, the operation names and the
// metric names, for dashboards, alerts and tests; the queues record them.
//
// Queues are instrumented through their options (blocking.WithTracerProvider,
// blocking.WithMeterProvider, blocking.WithPropagator); by default they use
// the otel global providers and propagator, which do nothing until the
// application installs an SDK, so an application that does not use
// OpenTelemetry pays almost nothing.
//
// # Conventions
//
// Spans and metrics follow the OpenTelemetry messaging semantic conventions
// v1.43.0 (go.opentelemetry.io/otel/semconv/v1.43.0): the tracer's and
// meter's instrumentation scope is ScopeName with schema URL SchemaURL.
// The conventions' attributes, on every span and metric:
//
//   - messaging.system "redelay" (System: the conventions allow a system of
//     one's own)
//   - messaging.destination.name: the queue's name
//   - server.address and server.port: the Redis server as the client was
//     configured with it, with no lookup: a *redis.Client's address (a Unix
//     socket's path, with no port), a *redis.ClusterClient's first address
//     (which names the cluster: the node that serves a queue moves with its
//     slot); none for a failover (Sentinel) client, whose master changes
//   - messaging.operation.name and messaging.operation.type on the spans
//     and metrics of messaging operations (below)
//   - error.type when the operation failed (below)
//
// # Spans
//
// A span is named after its operation (messaging.operation.name) and the
// queue, "send orders":
//
//   - "send" (PRODUCER, type send) for every offer, immediate or delayed,
//     with messaging.message.id and redelay.delay_ms; OfferBatch makes one
//     for the batch, with messaging.batch.message_count. Its context is the
//     item's creation context: it travels in the item's envelope headers,
//     and nacks and reclaims keep it.
//   - "receive" (CLIENT, type receive) for every Take, Poll, Receive,
//     TakeBatch and ReceiveBatch that returned items, from the moment the
//     call began (or its first item fell due, if later) to the moment it
//     returned: a child of the caller's span, linked to each item's creation
//     context; messaging.message.id and redelay.attempt, or for the batch
//     calls messaging.batch.message_count. Calls that end empty make none.
//   - "process" (CONSUMER, type process) around each Consume handler call,
//     linked to the item's creation context and, when the Consume context
//     has no span, its child, so that work done in another process lands in
//     the request's trace (with a span in the Consume context, that one is
//     the parent); the handler's context carries it. messaging.message.id,
//     redelay.attempt. Consume hands out what it leases to handlers: it is
//     push-based, and makes no receive span.
//   - "ack", "nack" and "dead_letter" (CLIENT, type settle) for every
//     settlement: Ack, Nack, and the ones Consume makes after its handler
//     (dead_letter: a handler's SkipRetry), children of the caller's span
//     (Consume's: of the process span), linked to the item's creation
//     context, with messaging.message.id; nack and dead_letter spans say
//     redelay.dead_lettered (a nack of the last attempt dead-letters).
//   - "transfer" (INTERNAL) for a transfer run that moved items, with
//     redelay.transfer.moved; not a messaging operation (items move inside
//     the broker), and a root span of its own (it serves many traces).
//
// Items the queue deals with before handing them out (past their TTL,
// undecodable, no envelope, a lease expired) make no span: they are counted
// and logged.
//
// A failed operation's span has an error status, the error as an event,
// and error.type: for redelay's own errors, the sentinel they wrap:
// lease_lost, duplicate, queue_full, not_replicated, closed,
// payload_too_large, invalid_argument, invalid_queue, corrupt, decode,
// not_found; canceled and timeout for the context's errors; the first word
// of an error Redis replied (OOM, READONLY, WRONGTYPE...); otherwise, as for
// a handler's error (under SkipRetry or RetryAfter), the conventions'
// default: the error's Go type under any fmt.Errorf wrapping
// ("github.com/you/app.PaymentError", "*errors.errorString"), or what an
// ErrorType() string method in its chain says.
//
// # Metrics
//
// The conventions' metrics, with messaging.operation.name:
//
//   - messaging.client.sent.messages ({message}): items offered (send),
//     with error.type for those of an offer that failed
//   - messaging.client.consumed.messages ({message}): items handed out
//     (receive), by Take, Receive, the batch calls and Consume
//   - messaging.client.operation.duration (s): send, receive, ack, nack,
//     dead_letter, with messaging.operation.type; the duration of the span
//   - messaging.process.duration (s): process, per handler call
//
// redelay's own:
//
//   - redelay.messages.acked, redelay.messages.nacked,
//     redelay.messages.dead_lettered, redelay.messages.expired ({message})
//   - redelay.lateness (s): delivery time minus due time, the headline
//     figure of a delayed queue
//   - redelay.queue.depth ({message}, gauge) per redelay.queue.state
//     (delayed, retry, ready, inflight, dead), redelay.queue.latency (s,
//     gauge: how long the oldest ready item has waited since it fell due,
//     as blocking.Stats.Latency: the figure to alert on) and
//     redelay.queue.paused ({queue}, gauge: 1 while paused), and
//     redelay.messages.dead_dropped ({message}, observable counter: dead
//     letters dropped by blocking.WithDeadLetterBounds), all from
//     one stats script call per collection (one per partition), for each
//     queue that consumes or transfers in the process (a queue used only to
//     offer reports none)
//   - redelay.transfer.batch.size ({message}), redelay.transfer.errors
//     ({run})
//   - redelay.redis.eviction: observable gauge, 1 while the Redis server
//     may evict keys (its maxmemory-policy, in redelay.redis.maxmemory_policy,
//     is not noeviction), 0 while it may not; for each queue that consumes
//     or transfers in the process, with no network call (the policy is read
//     once per client, see docs/reliability.md)
//
// Message IDs, of high cardinality, are on spans only.
package tracing
