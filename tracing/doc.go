// Package tracing names redelay's OpenTelemetry instrumentation: spans that
// follow an item from the request that offered it to the handler that
// processed it, and metrics for throughput, lateness and queue depth. It
// exports the scope name, the attribute keys, the span operations and the
// metric names, for dashboards, alerts and tests; the queues record them.
//
// Queues are instrumented through their options (blocking.WithTracerProvider,
// blocking.WithMeterProvider, blocking.WithPropagator); by default they use
// the otel global providers and propagator, which do nothing until the
// application installs an SDK, so an application that does not use
// OpenTelemetry pays almost nothing.
//
// # Spans
//
// Names and attributes follow the OpenTelemetry messaging semantic
// conventions (semconv v1.43.0), with messaging.system "redelay":
//
//   - "send <queue>" (PRODUCER) for every offer, immediate or delayed, with
//     messaging.message.id, messaging.operation.type "send" and
//     redelay.delay_ms. Its context travels in the item's envelope headers.
//   - "receive <queue>" (CONSUMER) for each item Take, Receive or Consume's
//     receivers get, from the moment the call started waiting (or the item
//     fell due, if later) to the moment it got the item. When the caller's
//     context has a span, it is the parent and the producer's span is
//     linked; otherwise the span joins the producer's trace as its child.
//   - "process <queue>" (CONSUMER) around each Consume handler, a child of
//     the producer's span, so work done in another process lands in the
//     request's trace; the handler's context carries it. Retries keep the
//     original producer, because the headers travel with the item.
//   - "transfer <queue>" (INTERNAL) for a transfer run that moved items, with
//     redelay.transfer.moved; a root span of its own (it serves many traces).
//
// # Metrics
//
//   - messaging.client.sent.messages, messaging.client.consumed.messages
//   - redelay.messages.acked, redelay.messages.nacked,
//     redelay.messages.dead_lettered
//   - messaging.process.duration (s), per handler call, with error.type
//   - redelay.lateness (s): delivery time minus due time, the headline
//     figure of a delayed queue
//   - redelay.queue.depth: observable gauge per redelay.queue.state
//     (delayed, retry, ready, inflight, dead), read in one pipelined round
//     trip per collection, for each queue that consumes or transfers in the
//     process (a queue used only to offer reports no depth)
//   - redelay.transfer.batch.size ({message}), redelay.transfer.errors ({run})
//   - redelay.redis.eviction: observable gauge, 1 while the Redis server
//     may evict keys (its maxmemory-policy, in redelay.redis.maxmemory_policy,
//     is not noeviction), 0 while it may not; for each queue that consumes
//     or transfers in the process, with no network call (the policy is read
//     once per client, see docs/reliability.md)
//
// Every metric carries messaging.system and messaging.destination.name.
package tracing
