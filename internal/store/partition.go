package store

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
)

// A Partition is one queue partition's keys and the operations on them;
// the files of this package cut them by protocol step: offer.go, claim.go,
// lease.go, move.go, read.go, admin.go, layout.go and schedule.go.

// Partition is the Redis side of one queue partition: its keys and every operation on
// them.
type Partition struct {
	c *Client
	K keys.Set
	// ack: offers, acks and settlements wait for replicas (SetReplicaAck);
	// nil: they do not, and cost nothing more.
	ack *replicaAck
	// dead: q holds dead letters (SetDeadLetters).
	dead bool
}

// marker is PRIO_MARKER of prelude.lua: the ready list's tail while the
// queue's priority set holds items. It is no envelope (first byte 0).
const marker = "\x00"

// IsMarker reports whether b is the priority marker or a group's turn
// (TURN of prelude.lua: 0, 1, then the group's key), which a blocking wait
// (WaitClaim) can return: the caller takes with TakeMarked instead. Neither
// is an envelope (first byte 0).
func IsMarker(b []byte) bool {
	return len(b) == 1 && b[0] == 0 || len(b) >= 2 && b[0] == 0 && b[1] == 1
}

// Partition returns the operations on the queue partition with keys k.
func (c *Client) Partition(k keys.Set) *Partition { return &Partition{c: c, K: k} }

// Client returns the client q runs on.
func (q *Partition) Client() *Client { return q.c }

// SetDeadLetters marks q as a queue of dead letters, before its first use:
// its receives (Lease) lease every item, whatever deadline (WithTTL) it
// carries, since an item's deadline ends when it is dead-lettered.
func (q *Partition) SetDeadLetters() { q.dead = true }

// write runs a script that offers or settles: as eval does, or, with
// replica acknowledgement, followed by WAIT (werr wraps ErrNotReplicated
// when WAIT did not confirm the script's writes).
func (q *Partition) write(ctx context.Context, s *redis.Script, keys []string, args ...any) (cmd *redis.Cmd, werr error) {
	if q.ack == nil {
		return q.c.eval(ctx, s, keys, args...), nil
	}
	return q.replicatedEval(ctx, s, keys, args...)
}
