package tracing

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of redelay's tracer and meter.
// Their schema URL is SchemaURL.
const ScopeName = "github.com/redelay/redelay"

// SchemaURL names the version of the OpenTelemetry semantic conventions
// redelay's telemetry follows: v1.43.0.
const SchemaURL = "https://opentelemetry.io/schemas/1.43.0"

// System is the messaging.system attribute value. The conventions list no
// value for redelay and allow one of its own; "redis" would name the
// transport, not the queue.
const System = "redelay"

// Attribute keys of redelay's own. The rest are the messaging semantic
// conventions' (messaging.system, messaging.destination.name,
// messaging.operation.name, messaging.message.id, server.address, ...).
const (
	// DelayKey is the delay an item was offered with, in milliseconds
	// (send spans).
	DelayKey = attribute.Key("redelay.delay_ms")
	// AttemptKey is the delivery number, 1 on the first delivery (receive
	// and process spans).
	AttemptKey = attribute.Key("redelay.attempt")
	// DeadLetteredKey says whether a settlement moved its item to the dead
	// letters (nack and dead_letter spans): a nack of the last attempt
	// does.
	DeadLetteredKey = attribute.Key("redelay.dead_lettered")
	// QueueStateKey is the state a depth is of (MetricQueueDepth): delayed,
	// retry, ready, inflight or dead.
	QueueStateKey = attribute.Key("redelay.queue.state")
	// TransferMovedKey is how many items a transfer run moved (transfer
	// spans).
	TransferMovedKey = attribute.Key("redelay.transfer.moved")
)

// Operation names (messaging.operation.name). A span is named after its
// operation and the queue: "send orders".
const (
	SpanSend       = "send"        // PRODUCER, every offer; its context is the item's creation context
	SpanReceive    = "receive"     // CLIENT, every Take, Poll, Receive and batch of them that returned items
	SpanProcess    = "process"     // CONSUMER, every Consume handler call
	SpanAck        = "ack"         // CLIENT, every Ack (Consume's included): a settlement
	SpanNack       = "nack"        // CLIENT, every Nack (Consume's of a failed handler included): a retry, or the dead letters after the last attempt
	SpanDeadLetter = "dead_letter" // CLIENT, a delivery sent to the dead letters at once (a handler's SkipRetry)
	SpanTransfer   = "transfer"    // INTERNAL, every transfer run that moved items; not a messaging operation
)

// Metric names. Every metric carries messaging.system,
// messaging.destination.name, and server.address and server.port when
// the client has them; the conventions' metrics carry
// messaging.operation.name too, and error.type when the operation failed.
const (
	MetricSent              = "messaging.client.sent.messages"      // counter, {message}: items offered (attempted; error.type when the offer failed)
	MetricConsumed          = "messaging.client.consumed.messages"  // counter, {message}: items taken, received, or leased for a Consume handler
	MetricOperationDuration = "messaging.client.operation.duration" // histogram, s: send, receive, ack, nack, dead_letter, with messaging.operation.type
	MetricAcked             = "redelay.messages.acked"              // counter, {message}
	MetricNacked            = "redelay.messages.nacked"             // counter, {message}: given back for a retry
	MetricDeadLettered      = "redelay.messages.dead_lettered"      // counter, {message}
	MetricExpired           = "redelay.messages.expired"            // counter, {message}: past their TTL, dead-lettered instead of delivered (also counted as dead-lettered)
	MetricProcess           = "messaging.process.duration"          // histogram, s: Consume handler calls, with error.type when failed
	MetricLateness          = "redelay.lateness"                    // histogram, s: delivery time minus due time
	MetricDepth             = "redelay.queue.depth"                 // gauge, {message}: items by redelay.queue.state
	MetricLatency           = "redelay.queue.latency"               // gauge, s: how long the oldest ready item has waited since it fell due (blocking.Stats.Latency)
	MetricPaused            = "redelay.queue.paused"                // gauge, {queue}: 1 while the queue is paused, else 0 (blocking.Stats.Paused)
	MetricDeadDropped       = "redelay.messages.dead_dropped"       // observable counter, {message}: dead letters dropped by the queue's bounds (blocking.Stats.DeadDropped)
	MetricBatch             = "redelay.transfer.batch.size"         // histogram, {message}: items moved by one transfer run
	MetricTransferErr       = "redelay.transfer.errors"             // counter, {run}: failed transfer runs
)

// MetricEviction is a gauge, 1 while the Redis deployment of the queue
// may evict keys when it is full (its maxmemory-policy, on some master,
// is not noeviction: queued items can vanish without an error) and 0
// while it may not, with the policy in RedisPolicyKey. Nothing is
// reported while the policy is unknown (the server refuses INFO).
const MetricEviction = "redelay.redis.eviction"

// RedisPolicyKey is the maxmemory-policy of MetricEviction.
const RedisPolicyKey = attribute.Key("redelay.redis.maxmemory_policy")
