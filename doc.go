// Package redelay is the module of typed, Redis-backed delayed and blocking
// queues for Go, in the style of Redisson's RDelayedQueue: offer a value
// with a delay, and consumers waiting on the queue receive it when it falls
// due, in due order, once. The root package holds no code; the API is in
// its packages:
//
//   - [github.com/redelay/redelay/blocking]: Queue[T], the queue consumers
//     wait on. Offer, Take and Poll (at most once); Receive with Ack, Nack
//     and Extend, and Consume, a pool of handlers (at least once); dead
//     letters and Redrive.
//   - [github.com/redelay/redelay/delayed]: Queue[T], which holds items
//     until they fall due on the Redis server's clock, then hands them to a
//     blocking queue: Offer, OfferAt, OfferBatch, and cancel by ID with
//     Remove.
//   - [github.com/redelay/redelay/codec]: how values are encoded: Msgpack
//     (the default), JSON, Raw, or a codec of your own.
//   - [github.com/redelay/redelay/transfer]: a process that moves due items
//     for named queues without consuming them (every consumer does this
//     already; run it for queues whose producers and consumers come and go).
//   - [github.com/redelay/redelay/tracing]: the names of redelay's
//     OpenTelemetry spans, attributes and metrics.
//
// A first program:
//
//	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
//	q := blocking.New[string](rdb, "reminders")
//	defer q.Close()
//	dq := delayed.New(q)
//	defer dq.Close()
//
//	id, err := dq.Offer(ctx, "call back", 30*time.Minute) // due in 30 minutes
//	...
//	v, err := q.Take(ctx) // elsewhere: waits until an item is due
//
// The README covers the guarantees (what "once" means, what a crash, a
// failover or a cut connection costs), the key layout and the stored
// format.
package redelay
