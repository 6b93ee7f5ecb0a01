// Package redelay is the module of typed, Redis-backed delayed and blocking
// queues for Go, in the style of Redisson's RDelayedQueue: offer a value
// with a delay, and consumers waiting on the queue receive it when it falls
// due, in due order, once. The root package holds no code; the API is in
// its packages:
//
//   - [github.com/redelay/redelay/blocking]: Queue[T], the queue consumers
//     wait on. Offer (WithPriority), Take and Poll (at most once); Receive
//     with Ack, Nack and Extend, and Consume, a pool of handlers (at least
//     once); dead letters and Redrive; Stats, Peek, Pause and Resume.
//   - [github.com/redelay/redelay/delayed]: Queue[T], which holds items
//     until they fall due on the Redis server's clock, then hands them to a
//     blocking queue: Offer, OfferAt, OfferBatch, cancel by ID with
//     Remove, duplicate modes (WithReplace, WithDebounce, WithUniqueFor)
//     and recurring schedules (Schedule).
//   - [github.com/redelay/redelay/codec]: how values are encoded: Msgpack
//     (the default), JSON, Raw, or a codec of your own.
//   - [github.com/redelay/redelay/transfer]: a process that moves due items
//     for named queues without consuming them (every consumer does this
//     already; run it for queues whose producers and consumers come and go).
//   - [github.com/redelay/redelay/tracing]: the names of redelay's
//     OpenTelemetry spans, attributes and metrics.
//   - [github.com/redelay/redelay/inspect]: queues seen and steered from
//     code without their type: counts, items by state, cancel, promote,
//     reschedule, requeue, purge, pause, resume, schedules.
//   - [github.com/redelay/redelay/dashboard]: an http.Handler that shows
//     and steers every queue in a browser, to mount behind your own
//     authentication.
//   - [github.com/redelay/redelay/redelaytest]: tests of code that uses
//     the queues, on an embedded Redis with a clock the test moves
//     (Advance), so that a 30-minute timeout is tested in milliseconds.
//
// The command-line tool is the module github.com/redelay/redelay/cmd/redelay
// (its own go.mod): `redelay stats`, `redelay ls QUEUE --state dead`,
// `redelay dashboard --demo` and more.
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
