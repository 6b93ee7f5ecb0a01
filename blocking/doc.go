// Package blocking provides [Queue], a typed FIFO queue in Redis that
// consumers wait on.
//
//	q := blocking.New[Order](rdb, "orders")
//	defer q.Close()
//	id, err := q.Offer(ctx, order)      // ready now
//	v, err := q.Take(ctx)               // waits until an item is ready or ctx ends
//	v, ok, err := q.Poll(ctx, time.Second)
//
// Items become ready either at once ([Queue.Offer]) or when they fall due in
// the queue's delayed set (see package delayed). Every process that takes
// from a queue also transfers its due items, so consumers never depend on a
// producer process being alive.
//
// # Waiting, cancellation and Close
//
// A waiting call blocks in Redis for at most half a second at a time
// (less when the client's ReadTimeout is short), so a dead connection is
// noticed, and it returns as soon as its context ends or the queue is
// closed, whatever the client's ContextTimeoutEnabled setting and even
// while the network is stalled: the call in flight finishes in the
// background, and an item it took goes back to the head of the queue.
// Waiting costs Redis no writes, and each ready item wakes one waiting
// consumer. A waiting call holds one connection of the client's pool: size
// redis.Options.PoolSize for the consumers plus the producers.
//
// # Delivery
//
// Take removes the item in the same step that returns it: delivery is at
// most once. Receive leases the item instead: it must be settled with
// [Delivery.Ack] or [Delivery.Nack] within the visibility timeout, or it
// becomes ready again for another consumer with Attempt+1, so delivery is
// at least once. [Queue.Consume] runs a pool of handlers over Receive,
// extends leases while they work, retries failures with backoff, and
// dead-letters items after WithMaxAttempts deliveries:
//
//	q := blocking.New[Order](rdb, "orders",
//		blocking.WithVisibilityTimeout(30*time.Second), blocking.WithMaxAttempts(5))
//	err := q.Consume(ctx, func(ctx context.Context, d *blocking.Delivery[Order]) error {
//		return handle(ctx, d.Value) // nil acks; an error or a panic retries
//	}, blocking.WithConcurrency(8))
//
// A handler may return [SkipRetry] to dead-letter the item at once, or
// [RetryAfter] to choose its retry delay, or settle the delivery itself.
// When Consume's context ends it gives back at once the items it leased
// ahead, lets running handlers finish for WithShutdownTimeout (30 s by
// default), then cancels them and gives their items back.
//
// Retries wait in a set of their own, apart from the delayed items a
// delayed.Queue offers: they count, clear and cancel separately.
//
// Dead letters are a queue of their own, [Queue.DeadLetters]; the reason is
// in each delivery's Headers[HeaderError], and [Queue.Redrive] moves them
// back. Bytes that are no envelope at all go to the dead letters at once. An
// item that cannot be decoded (a value of another type, or an envelope
// written by a newer release) is a failed attempt: retried with backoff, so
// a rolling upgrade or a consumer deployed with the wrong type does not
// empty the queue into the dead letters.
//
// # Operating a queue
//
// [Queue.Stats] reads the counts by state, the pause flag, the latency of
// the oldest ready item and the next due time in one round trip;
// [Queue.Peek] shows the next ready items without taking them;
// [Queue.ReceiveBatch] and [Queue.TakeBatch] take up to 256 at once;
// [Queue.Purge] drops the ready items (the dead letters, on DeadLetters());
// [Queue.RedriveID] brings one dead letter back. [Queue.Pause] stops every
// process from handing out items, until [Queue.Resume]: consumers wait,
// while offers, transfers and lease reclaiming go on. Package inspect does
// the same for tools that do not know T.
//
// # Flow control
//
// Limits that hold across every process of a queue, checked in Redis by
// the scripts that offer and lease: [WithRateLimit] (deliveries started
// per period, spread evenly) and [WithGlobalConcurrency] (items in flight)
// on Consume, [WithMaxSize] on the queue (an offer past it returns
// [ErrQueueFull] and stores nothing), and [WithTTL] on an offer (an item
// not delivered by its due time plus the TTL goes to the dead letters as
// expired).
//
// # Groups
//
// [WithGroup] puts an item in a group (a tenant, an account, an endpoint):
// consumers are served round-robin across the groups that have ready
// items, one item per group per turn, so one group's backlog does not hold
// back the others. [WithGroupConcurrency] bounds the items of one group in
// flight across every process (1: strictly one at a time, in order), and
// [WithGroupRateLimit] the starts per period of one group. [Queue.Groups]
// lists the groups, largest first; [Queue.PauseGroup], [Queue.ResumeGroup]
// and [Queue.PurgeGroup] act on one.
//
// # Failovers
//
// Redis replicates asynchronously, so a failover can lose writes the master
// acknowledged. [WithReplicaAck] makes offers, acks and nacks wait until
// replicas confirm them (WAIT, in the same round trip): a nil error then
// means the write is on the replicas too, and [ErrNotReplicated] means it
// was done on the master only. docs/reliability.md measures what a
// Sentinel failover, a Cluster failover and a slot move cost a queue.
//
// # Partitions
//
// Every key of a queue shares one hash tag, so a Redis Cluster serves a
// queue from one master. [WithPartitions] spreads one queue over n hash
// tags (and so over up to n masters): an item lives in the partition its
// ID hashes to, calls by ID go to that partition, counts cover them all,
// and Take, Receive and Consume take from every partition in turn.
// Ordering holds within a partition; the README's "Partitions" section
// gives the connection budget.
//
// # Resends
//
// go-redis sends a command again when its reply is lost. Every call of the
// queue is safe to send twice: an offer is stored once, a receive returns
// the leases of its first run, and an ack or nack whose reply was lost is
// not reported as a lost lease. The README says exactly what "once" means.
package blocking
