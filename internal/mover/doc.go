// Package mover moves due items from a queue's delayed and retry sets to
// its ready list, and reclaims expired leases. (The public package transfer
// runs it for named queues on its own.)
//
// One [Service] runs per Redis client in a process and serves every queue of
// that client: queues join with [Register] and leave with
// [Registration.Close]; the last one out stops the service. For each queue a
// worker goroutine runs the transfer script:
//
//   - at start, and again on every (re)subscription of the wake-up channel,
//     so items offered while no process was transferring move at once;
//   - when a timer set to the earliest due time fires (computed from the
//     Redis server's clock, so local clock skew does not matter);
//   - when a producer publishes that it offered a new earliest item;
//   - at least every sweep interval (default 1 s), so a lost notification
//     delays an item by at most that much.
//
// Each script call moves at most a batch of items (default 500) and the
// worker repeats while batches come back full, so a backlog of any size
// drains without one call blocking Redis for long. Every move is one atomic
// script: workers in many processes never move an item twice.
//
// Errors (Redis down, failover, a script killed) are logged through the
// registration's slog.Logger and retried with capped exponential backoff; a
// worker runs until its queue is closed.
package mover
