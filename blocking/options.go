package blocking

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/queue"
)

// Option configures a queue at [New].
type Option func(*options)

type options struct {
	cfg queue.Config
	err error
}

func (o *options) fail(err error) {
	o.err = errors.Join(o.err, err)
}

// WithCodec sets how values are encoded. Default: [codec.Msgpack].
func WithCodec(c codec.Codec) Option {
	return func(o *options) {
		if c == nil {
			o.fail(errors.New("WithCodec(nil)"))
			return
		}
		o.cfg.Codec = c
	}
}

// WithLogger sets where the queue's background work logs (transfer errors,
// poison items). Default: slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l == nil {
			o.fail(errors.New("WithLogger(nil)"))
			return
		}
		o.cfg.Logger = l
	}
}

// WithMaxPayloadSize bounds an encoded value, in bytes; Offer of a larger
// value returns an error wrapping [ErrPayloadTooLarge]. Default 1 MiB; 0
// restores the default; -1 disables the check (Redis still caps a value at
// its proto-max-bulk-len, 512 MB by default).
func WithMaxPayloadSize(n int) Option {
	return func(o *options) {
		switch {
		case n == -1:
			o.cfg.MaxPayload = -1
		case n < -1:
			o.fail(fmt.Errorf("WithMaxPayloadSize(%d): must be positive, 0 or -1", n))
		default:
			o.cfg.MaxPayload = n
		}
	}
}

// WithTransferBatchSize sets how many due items one transfer script call
// moves at most (the transfer repeats while batches come back full).
// Default 500; at most 5000, so one call never holds Redis for long.
func WithTransferBatchSize(n int) Option {
	return func(o *options) {
		if n < 1 || n > queue.MaxBatchSize {
			o.fail(fmt.Errorf("WithTransferBatchSize(%d): must be 1..%d", n, queue.MaxBatchSize))
			return
		}
		o.cfg.BatchSize = n
	}
}

// WithSweepInterval sets the longest time the transfer waits between two
// runs when it has heard of nothing due; it bounds how late an item can be
// when a wake-up notification is lost. Default 1 s; at least 1 ms, at
// most an hour.
func WithSweepInterval(d time.Duration) Option {
	return func(o *options) {
		if d < time.Millisecond || d > time.Hour {
			o.fail(fmt.Errorf("WithSweepInterval(%v): must be 1ms to 1h", d))
			return
		}
		o.cfg.Sweep = d
	}
}

// maxVisibility bounds the visibility timeout (a year: a lease deadline far
// beyond any handler, and far inside the range Redis stores exactly).
const maxVisibility = queue.MaxVisibility

// WithVisibilityTimeout sets how long an item received with Receive (or
// Consume) stays leased to its receiver. If it is neither acked nor nacked
// by then (the consumer crashed, hung, or lost its connection), it becomes
// ready again for another consumer, with Attempt+1. Pick it above the
// longest normal handling time; Consume extends leases while a handler runs,
// so there it only bounds how soon a crashed consumer's items come back.
// Default 30 s; at least 10 ms, at most a year.
func WithVisibilityTimeout(d time.Duration) Option {
	return func(o *options) {
		if d < 10*time.Millisecond || d > maxVisibility {
			o.fail(fmt.Errorf("WithVisibilityTimeout(%v): must be 10ms to a year", d))
			return
		}
		o.cfg.Visibility = d
	}
}

// WithMaxAttempts sets how many deliveries an item gets: when delivery n
// fails (Nack, a handler error, or an expired lease) and n >= max, the item
// goes to the dead letters with the last error instead of being retried.
// Default 10; at least 1.
//
// The limit belongs to the queue, not to one process: a process that sets
// it records it in Redis when it starts consuming (Take, Poll, Receive,
// Consume), and every process (whatever its own setting) dead-letters at
// the attempt recorded last. A process that
// does not set it uses the recorded limit, or 10 when none is.
func WithMaxAttempts(n int) Option {
	return func(o *options) {
		if n < 1 {
			o.fail(fmt.Errorf("WithMaxAttempts(%d): must be at least 1", n))
			return
		}
		o.cfg.MaxAttempts = n
		o.cfg.MaxAttemptsSet = true
	}
}

// WithMaxSize bounds the queue: an offer that would take it past n items
// pending (delayed, or waiting for a retry) plus ready returns an error
// wrapping [ErrQueueFull] and stores nothing, so producers are pushed back
// instead of filling Redis. Items leased to consumers do not count, and
// nothing already in the queue is ever refused (a Nack, an expired lease, a
// recurring schedule's tick). The count and the offer are one script, so
// concurrent producers in any number of processes never take the queue
// past n. delayed.OfferBatch fits as a whole or not at all. Every process
// that offers should set the same n. Default: no bound; at least 1.
//
// With WithPartitions(p), each partition holds at most n/p items (rounded
// down; n must be at least p), so the queue never holds more than n, and
// an offer is refused when its item's partition is full, which can happen
// a little before the queue as a whole holds n. A bounded OfferBatch is
// then all or nothing per partition.
func WithMaxSize(n int64) Option {
	return func(o *options) {
		if n < 1 {
			o.fail(fmt.Errorf("WithMaxSize(%d): must be at least 1", n))
			return
		}
		o.cfg.MaxSize = n
	}
}

// WithReplicaAck makes every write that hands an item over wait until
// replicas confirm it: each offer (Offer; and delayed.Queue's Offer,
// OfferAt and OfferBatch, duplicate modes included), Delivery.Ack,
// Delivery.Nack, and the acks and nacks of Consume return only after
// `WAIT replicas timeout`, sent on the connection that made the write
// and in the same round trip, reports that at least replicas replicas
// have it. Redis replicates asynchronously, so without it a failover can
// lose writes the master acknowledged (an offer that returned nil, an
// ack that comes back as a second delivery); with it, a nil error means
// the write is on replicas+1 servers. Reads, Take, Receive and the
// background work (transfers, lease extension and reclaim) do not wait.
// Default: off (writes do not wait, and cost nothing more).
//
// When WAIT does not confirm the write within timeout, the call returns
// an error wrapping [ErrNotReplicated]: the write was done on the master
// (an offer returns its ID with the error, an ack or nack settled the
// delivery), and is lost only if the master fails before a replica copies
// it. What to do: treat it as a warning that durability is degraded
// (replicas down or lagging), not as a failed write; do not blindly offer
// again, which would store the item twice, unless the item has an ID
// (WithID) and duplicates are harmless; alert, and for items that must
// survive a failover, check later that they are there (delayed.Queue.Get,
// or an ID-keyed offer again with delayed.WithID, which reports
// ErrDuplicate while it is pending).
//
// WAIT costs a round trip's wait for the slowest needed replica (on
// loopback, docs/reliability.md measures it). replicas must be at least 1;
// timeout must be positive, at most a minute, and fit in the client's
// ReadTimeout less 150 ms (WAIT's reply must come within the read
// timeout); otherwise the queue is invalid ([ErrInvalidQueue] naming the
// problem). On a *redis.ClusterClient the write and WAIT go to the master
// that serves the queue's slot. WAIT confirms that replicas received the
// write, not that they wrote it to disk.
func WithReplicaAck(replicas int, timeout time.Duration) Option {
	return func(o *options) {
		o.cfg.ReplicaAck = replicas
		o.cfg.ReplicaAckTimeout = timeout
		o.cfg.ReplicaAckSet = true
	}
}

// WithTracerProvider sets where the queue's spans go. Default: the otel
// global TracerProvider (a no-op until the application installs an SDK).
// See package tracing for the spans. nil means the default.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.cfg.Telemetry.TracerProvider = tp }
}

// WithMeterProvider sets where the queue's metrics go. Default: the otel
// global MeterProvider. See package tracing for the metrics. nil means the
// default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.cfg.Telemetry.MeterProvider = mp }
}

// WithPropagator sets how trace context travels in an item's headers, from
// the producer's span to the consumer's. Default: the otel global
// propagator (a no-op until the application sets one, e.g.
// propagation.TraceContext{}). nil means the default.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(o *options) { o.cfg.Telemetry.Propagator = p }
}

// WithPartitions spreads the queue over n sets of keys, each with a hash
// tag of its own, so that a Redis Cluster spreads it over up to n slots
// and therefore masters (see the README, "Partitions"). An item lives in
// the partition its ID hashes to (a recurring schedule's ticks, and IDs
// of their shape, in partition 0); Take, Poll, Receive and Consume take
// from every partition, in turn. Ordering holds within a partition only.
//
// Every process must open the queue with the same n: the first process
// records it in Redis, and a process that opens the queue with another n
// (WithPartitions absent means 1) gets [ErrInvalidQueue] naming both,
// from its first call. Default 1: the layout of a queue without
// partitions, at the same cost. n must be 1 to 256.
func WithPartitions(n int) Option {
	return func(o *options) {
		if n < 1 || n > queue.MaxPartitions {
			o.fail(fmt.Errorf("WithPartitions(%d): must be 1..%d", n, queue.MaxPartitions))
			return
		}
		o.cfg.Partitions = n
	}
}

// WithPrefix replaces "redelay" at the start of every key of the queue
// with prefix: its items, dead letters, schedules, meta hash and wake-up
// channel, and the registry of queues it is announced in (prefix:queues).
// Apps or environments sharing one Redis (or one Cluster, which has no
// SELECT) give each its own prefix: two queues of one name under two
// prefixes never see each other's items, counts or pause. Every process
// of a queue, its transfer (transfer.WithPrefix) and its inspector
// (inspect.WithPrefix) must use the same prefix. Default: "redelay".
// A prefix that is empty, longer than 64 bytes, or holds braces,
// whitespace, control characters or a ':' at either end makes every call
// return ErrInvalidQueue.
func WithPrefix(prefix string) Option {
	return func(o *options) {
		if err := queue.CheckPrefix(prefix); err != nil {
			o.fail(fmt.Errorf("WithPrefix: %w", err))
			return
		}
		o.cfg.Prefix = prefix
	}
}

// WithRetention sets how long a queue that holds nothing, and that no
// process has used, is kept: every process that consumes or transfers a
// queue sweeps, every tenth of this period (at most every 10 minutes),
// the registry of its key prefix for queues no process announced for
// this long, and forgets those that hold nothing (no item in any state,
// no schedule): their leftover keys (settings, codec, totals, history,
// counters) are deleted and they leave the registry (inspect's Forget
// does it at once). A process announces every queue it uses when it
// starts, and again every hour while it runs; a producer at its first
// offer, and again every hour. Apps that name queues per tenant or per
// entity rely on it to leave nothing behind. Default: 7 days. A negative
// d makes this process not sweep; 0 keeps the default.
func WithRetention(d time.Duration) Option {
	return func(o *options) { o.cfg.Retention = d }
}

// WithDeadLetterBounds bounds the queue's dead letters: at most max of
// them (0: no bound on the count), none dead-lettered more than maxAge
// ago (0: no bound on the age). The oldest are dropped first: at once
// past max, when an item is dead-lettered, and past maxAge by the
// transfer of a consuming process (every sweep interval, in batches).
// What is dropped is counted in Stats.DeadDropped and the counter
// redelay.messages.dead_dropped. The bounds are recorded in Redis for
// every process when this one starts consuming or transferring, like
// WithMaxAttempts. Default: unbounded, nothing dropped. Negative values
// are a bad option.
func WithDeadLetterBounds(max int64, maxAge time.Duration) Option {
	return func(o *options) {
		if max < 0 || maxAge < 0 {
			o.fail(fmt.Errorf("WithDeadLetterBounds(%d, %v): want 0 (no bound) or more", max, maxAge))
			return
		}
		o.cfg.DeadMax, o.cfg.DeadMaxAge, o.cfg.DeadBoundsSet = max, maxAge, true
	}
}
