// Package delayed provides [Queue], which holds items until they fall due and
// then hands them, in due order, to a blocking.Queue: the Redis counterpart of
// Redisson's RDelayedQueue, with typed values and cancel by ID.
//
//	q := blocking.New[Order](rdb, "orders")
//	dq := delayed.New(q)
//	defer dq.Close()
//
//	id, err := dq.Offer(ctx, order, 30*time.Minute)                    // due in 30 min, server clock
//	_, err = dq.Offer(ctx, order, 30*time.Minute, delayed.WithID("order-42"))
//	ok, err := dq.Remove(ctx, "order-42")                              // paid: cancel the timer
//
//	v, err := q.Take(ctx)                                              // consumers wait on q
//
// # How items move
//
// An offered item waits in a Redis sorted set scored by its due time. A
// transfer goroutine (package transfer) moves due items, atomically and in
// bounded batches, to the blocking queue's list. It is event-driven: it
// sleeps until the earliest due time and is woken through Redis pub/sub when
// a producer offers an earlier item, with a periodic sweep (default 1 s) as
// a safety net for lost notifications. Every process that holds a delayed
// queue (unless [WithoutTransfer]) or takes from its blocking queue
// transfers it; many processes transferring at once never move an item
// twice. Items offered while no process transfers stay pending and move as
// soon as one starts.
//
// # Time
//
// [Queue.Offer] computes the due time on the Redis server's clock, so
// producers with skewed clocks still fire on time. [Queue.OfferAt] takes an
// absolute time, compared with the server's clock. Items due at the same
// millisecond become ready in offer order. An item is never ready before its
// due time; how late it is depends on the transfer's wake-up (typically a
// millisecond or two on an idle server) and never exceeds the sweep interval
// when Redis is reachable.
//
// # IDs
//
// Each item has an ID, random unless given with [WithID]. While an item with
// a given ID is pending, offering another with that ID fails with
// [ErrDuplicate] and keeps the first; once it has moved to the blocking queue
// the ID is free again. [Queue.Remove] cancels a pending item in O(log N).
// Retries that consumers schedule (Nack, a failed handler) are not pending
// items of the delayed queue: Size, Clear, Remove and WithID do not see
// them.
//
// # Operating on pending items
//
// [Queue.Get] and [Queue.Contains] look at a pending item by ID,
// [Queue.List] pages through them in due order; [Queue.Reschedule],
// [Queue.RescheduleAt] and [Queue.Promote] move one to a new due time or to
// the ready queue at once; [Queue.Update] replaces its value. Each is one
// atomic script, O(log N), on the server's clock: an item that a transfer
// moves at the same instant is moved once, by one of them, and the other
// finds it gone ([ErrNotFound]). An earlier due time wakes the transfers at
// once, so a rescheduled item fires as precisely as a fresh offer.
//
// # Duplicate modes
//
// With [WithID], a second offer of a pending ID is refused. Given with
// WithID, [WithReplace] makes it replace the pending item (value, headers
// and due time; the ID, the first EnqueuedAt and the place among equal due
// times stay); [WithDebounce] does the same with the due time bounded by
// the first offer's time + maxWait, so a stream of updates fires after the
// last one, and at least every maxWait; [WithUniqueFor] refuses the ID
// with [ErrDuplicate] for a window after the accepted offer, even once it
// was delivered. Without a pending item, replace and debounce are plain
// offers. The three exclude one another, each needs WithID, and
// [Queue.OfferBatch] refuses them: [ErrInvalidArgument]. Each such offer
// is one atomic script call of its own, idempotent on resend.
//
//	_, err := dq.Offer(ctx, draft, 2*time.Second,
//		delayed.WithID("save:"+docID), delayed.WithDebounce(10*time.Second))
//
// # Recurring schedules
//
// [Queue.Schedule] stores a schedule in the queue's Redis keys: at each
// tick of a cron spec (five fields, six with seconds, or a descriptor such
// as @daily or @every 90s; UTC unless [WithTimeZone] or CRON_TZ= says
// otherwise) its value is delivered once, as an item whose ID is
// "name@" and the tick's time in UTC, with the [HeaderSchedule] header.
// Every process that transfers the queue takes part, none of them a
// leader: each tick is materialized as a delayed item 2 s ahead by one
// compare-and-set script, once however many processes run, and then fires
// as precisely as any delayed item. Ticks missed while no process ran
// follow [WithMissedTicks] ([MissedLatest] by default). Scheduling a name
// again replaces it (a new spec withdraws the old one's pending ticks);
// [Queue.Unschedule] deletes it and withdraws its pending ticks;
// [Queue.Schedules] lists them.
//
//	err := dq.Schedule(ctx, "nightly-report", "0 3 * * *", report, delayed.WithTimeZone(berlin))
//
// # Resends and deadlines
//
// An offer is idempotent: when go-redis sends it again after a lost reply,
// or a copy held in the network arrives late, the item is stored once and
// a WithID offer does not find itself a duplicate. An offer whose context
// ends while it is on its way returns the context's error with the item's
// ID: it may have been stored. One whose context ends before it was sent
// returns the error without an ID: it was not.
package delayed
