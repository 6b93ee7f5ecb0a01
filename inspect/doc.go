// Package inspect looks at and steers every redelay queue on a Redis
// server, untyped, for tools: a command-line client, a web dashboard, a
// runbook script. It needs no queue's Go type: payloads come back as raw
// bytes and decoded generically.
//
//	in := inspect.New(rdb)
//	names, err := in.Queues(ctx)                       // every queue used on this Redis
//	st, err := in.Stats(ctx, "orders")                 // counts by state, Latency, NextDue
//	items, err := in.List(ctx, "orders", inspect.Dead, 0, 50)
//	err = in.Requeue(ctx, "orders", items[0].ID)       // a dead letter back to ready
//
// # States
//
// An item is in one of five states ([States]): [Delayed] (offered with a
// delay, not yet due), [Retry] (a failed delivery waiting for its next
// attempt), [Ready] (waiting to be taken), [Inflight] (received and not yet
// settled, or being handed to a consumer) and [Dead] (a dead letter). The
// counts of [Inspector.Stats] are by the same states.
//
// # Finding queues
//
// [Inspector.Queues] reads the registry of queues (the sorted set
// redelay:queues), never KEYS or SCAN: every process that consumes a queue,
// transfers it (delayed.New, transfer.Run) announces it there once, with
// its codec. A queue that only ever had producers is not listed, but every
// call that names it works. A name that is neither in the registry nor has
// any key in Redis returns [ErrNotFound]; each call checks this first, in
// one round trip (two nodes on a Cluster: the registry has a slot of its
// own).
//
// # Values
//
// [Item.Payload] is the codec's bytes as stored; [Item.Value] is the same
// decoded generically with the codec the queue records (the codec of its
// consuming processes, written with the announcement), never a guess:
// msgpack and JSON objects become map[string]any, arrays []any, strings
// string, booleans bool. Numbers: JSON gives float64 (encoding/json's
// plain decoding, what users of JSON expect); msgpack gives int64 for
// integers whatever width the encoder chose (uint64 above
// math.MaxInt64), float64 (float32 for a float32) for floats, []byte for
// binary, time.Time for times, and map keys that are not strings are
// formatted with fmt.Sprint.
// The raw codec gives the payload as a string when it is valid UTF-8, nil
// otherwise. When the value cannot be decoded (a custom codec, no codec
// recorded yet, bytes the codec refuses), Value is nil and
// [Item.DecodeError] says why; bytes that are no envelope at all (possible
// in the ready list and the dead letters) come back as an Item with an
// empty ID and the bytes in Payload. A msgpack or JSON value whose arrays
// and objects nest more than 1000 levels deep is not decoded either
// (DecodeError says so): no program means to send one, and its decoding
// and its text cost more with every level.
//
// [FormatJSON] writes a Value as JSON text for people and tools, bounded:
// at most a given number of bytes, and 100 levels of nesting, saying what
// it left out. The dashboard and the command-line client show values
// with it.
//
// # Cost and consistency
//
// Each method's comment gives its cost. Reads by page and moves of one
// delayed item are one script each, atomic and O(log N). Searches by ID
// outside the delayed set (retries, in-flight, ready and dead items) read
// the state from its start in chunks of 500, at most [blocking.ScanLimit]
// entries per state: an item further back is not found. Items move
// between states while a search reads (consumers, transfers and
// reclaimers run meanwhile), so a search may miss an item that moved and
// return [ErrNotFound]: asking again finds it in its new state. A change
// acts on the exact entry found (an item found in the ready list is
// deleted only if those bytes are still there), and looks again, three
// times at most, when the entry moved meanwhile: a change never acts on
// an item it did not find.
//
// Items taken from the dead letters with a queue's DeadLetters().Receive
// (leased or retried there) are not shown: the Dead state is the dead
// letters waiting to be taken, as Stats.Dead counts them.
//
// An Inspector holds no state but its client: it is safe for concurrent
// use, starts no goroutine and needs no Close.
package inspect
