// Package blocking provides [Queue], a typed FIFO queue in Redis that
// consumers wait on.
//
//	q := blocking.New[Order](rdb, "orders")
//	defer q.Close()
//	err := q.Offer(ctx, order)          // ready now
//	v, err := q.Take(ctx)               // waits until an item is ready or ctx ends
//	v, ok, err := q.Poll(ctx, time.Second)
//
// Items become ready either at once ([Queue.Offer]) or when they fall due in
// the queue's delayed set (see package delayed). Every process that takes
// from a queue also transfers its due items, so consumers never depend on a
// producer process being alive.
//
// # Blocking and cancellation
//
// Take and Poll wait with short server-side blocks (at most 500 ms, and well
// under the client's ReadTimeout) and check their context between them, so
// they return soon after the context ends, whatever the client's
// ContextTimeoutEnabled setting, and never leave a connection half-read. A
// waiting call holds one connection of the client's pool for its duration:
// size the pool (redis.Options.PoolSize) for the number of concurrent
// consumers plus producers.
//
// # Delivery
//
// Take removes the item in the same step that returns it: delivery is at most
// once. Receive leases the item instead: it must be settled with
// [Delivery.Ack] or [Delivery.Nack] within the visibility timeout, or it
// becomes ready again for another consumer with Attempt+1, so delivery is at
// least once. [Queue.Consume] runs a pool of handlers over Receive, extends
// leases while they work, retries failures with backoff, and dead-letters
// items after WithMaxAttempts deliveries:
//
//	q := blocking.New[Order](rdb, "orders",
//		blocking.WithVisibilityTimeout(30*time.Second), blocking.WithMaxAttempts(5))
//	err := q.Consume(ctx, func(ctx context.Context, d *blocking.Delivery[Order]) error {
//		return handle(ctx, d.Value) // nil acks; an error or a panic retries
//	}, blocking.WithConcurrency(8))
//
// Dead letters are a queue of their own, [Queue.DeadLetters]; the reason is
// in each delivery's Headers[HeaderError], and [Queue.Redrive] moves them
// back. An item that cannot be decoded (corrupt bytes, or a value of another
// type) goes to the dead letters at once and is logged; it never stops the
// queue. Every process that receives from a queue also reclaims its expired
// leases.
package blocking
