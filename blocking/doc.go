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
// once. An item that cannot be decoded (corrupt bytes, or a value of another
// type) is moved to the dead-letter list redelay:{name}:dead:ready and
// logged; it never stops the queue.
package blocking
