package tracing

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of redelay's tracer and meter.
const ScopeName = "github.com/redelay/redelay"

// System is the messaging.system attribute value.
const System = "redelay"

// Attribute keys of redelay's own. The rest follow the OpenTelemetry
// messaging semantic conventions (messaging.system,
// messaging.destination.name, messaging.message.id, ...).
const (
	// DelayKey is the delay an item was offered with, in milliseconds
	// (send spans).
	DelayKey = attribute.Key("redelay.delay_ms")
	// AttemptKey is the delivery number, 1 on the first delivery (receive
	// and process spans).
	AttemptKey = attribute.Key("redelay.attempt")
	// QueueStateKey is the state a depth is of (MetricQueueDepth): delayed,
	// retry, ready, inflight or dead.
	QueueStateKey = attribute.Key("redelay.queue.state")
	// TransferMovedKey is how many items a transfer run moved (transfer
	// spans).
	TransferMovedKey = attribute.Key("redelay.transfer.moved")
)

// Span names are an operation and the queue's name: "send orders".
const (
	SpanSend     = "send"     // PRODUCER, every offer
	SpanReceive  = "receive"  // CONSUMER, every item taken or received
	SpanProcess  = "process"  // CONSUMER, every Consume handler call
	SpanTransfer = "transfer" // INTERNAL, every transfer run that moved items
)

// Metric names. Every metric carries messaging.system and
// messaging.destination.name.
const (
	MetricSent         = "messaging.client.sent.messages"     // counter, {message}: items offered
	MetricConsumed     = "messaging.client.consumed.messages" // counter, {message}: items taken or received
	MetricAcked        = "redelay.messages.acked"             // counter, {message}
	MetricNacked       = "redelay.messages.nacked"            // counter, {message}: given back for a retry
	MetricDeadLettered = "redelay.messages.dead_lettered"     // counter, {message}
	MetricExpired      = "redelay.messages.expired"           // counter, {message}: past their TTL, dead-lettered instead of delivered (also counted as dead-lettered)
	MetricProcess      = "messaging.process.duration"         // histogram, s: Consume handler calls, with error.type when failed
	MetricLateness     = "redelay.lateness"                   // histogram, s: delivery time minus due time
	MetricDepth        = "redelay.queue.depth"                // gauge, {message}: items by redelay.queue.state
	MetricBatch        = "redelay.transfer.batch.size"        // histogram, {message}: items moved by one transfer run
	MetricTransferErr  = "redelay.transfer.errors"            // counter, {run}: failed transfer runs
)

// MetricEviction is a gauge, 1 while the Redis deployment of the queue
// may evict keys when it is full (its maxmemory-policy, on some master,
// is not noeviction: queued items can vanish without an error) and 0
// while it may not, with the policy in RedisPolicyKey. Nothing is
// reported while the policy is unknown (the server refuses INFO).
const MetricEviction = "redelay.redis.eviction"

// RedisPolicyKey is the maxmemory-policy of MetricEviction.
const RedisPolicyKey = attribute.Key("redelay.redis.maxmemory_policy")
