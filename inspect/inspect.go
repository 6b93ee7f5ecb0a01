package inspect

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/keys"
	iqueue "github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/transfer"
)

// Sentinel errors; every error the package returns wraps one of these, a
// Redis error or a context error, and names the problem.
var (
	// ErrNotFound: no queue of that name was ever used on this Redis, or
	// no item with that ID is where the call looks for it. It is
	// blocking.ErrNotFound (and delayed.ErrNotFound).
	ErrNotFound = blocking.ErrNotFound
	// ErrInvalidArgument: a bad queue name, state, ID, page or due time.
	// Nothing was read or changed. It is blocking.ErrInvalidArgument.
	ErrInvalidArgument = blocking.ErrInvalidArgument
	// ErrCorrupt: Schedules of a queue with a malformed schedule record.
	// Items that cannot be read are not errors here: List and Get return
	// them with Item.DecodeError set. It is blocking.ErrCorrupt.
	ErrCorrupt = blocking.ErrCorrupt
)

// Stats are a queue's counts by state and its timings: the type of
// blocking.Queue.Stats.
type Stats = blocking.Stats

// Inspector reads and changes the queues of one Redis deployment without
// knowing their Go types. It is safe for concurrent use, holds nothing but
// its client, starts no goroutine and needs no Close.
type Inspector struct {
	rdb redis.UniversalClient
	c   *store.Client
	srv *transfer.Server // what is known of rdb's server
}

// New returns an Inspector of the queues on rdb: a *redis.Client, a
// *redis.ClusterClient or a failover (Sentinel) client. New makes no
// network call; a nil client or a *redis.Ring (which would split a queue
// between shards) makes every call return ErrInvalidArgument.
func New(rdb redis.UniversalClient) *Inspector {
	in := &Inspector{rdb: rdb}
	if in.checkClient() == nil {
		in.c = store.New(rdb) // it reads the options of a *redis.Client: not nil
		in.srv = transfer.ServerOf(rdb)
	}
	return in
}

// Eviction returns the maxmemory-policy of the Redis deployment (on a
// Cluster, the first that evicts among the masters'), "" when unknown:
// the server refuses INFO (an ACL without @dangerous), or could not be
// read. Any policy but "noeviction" lets Redis delete the queues' keys
// when it is full, and items vanish without an error (see
// docs/reliability.md); Stats.Eviction reports the same. It is read with
// INFO memory (one round trip per master) once per client and again when
// the reading is a minute old, and shared with the queues of the process
// on the same client; a server that refuses INFO is not asked again.
func (in *Inspector) Eviction(ctx context.Context) (string, error) {
	if err := in.checkClient(); err != nil {
		return "", fmt.Errorf("eviction: %w", err)
	}
	return in.srv.Eviction(ctx, in.c), nil
}

// checkClient says why in cannot make calls, if it cannot.
func (in *Inspector) checkClient() error {
	if in == nil {
		return fmt.Errorf("nil Inspector: %w", ErrInvalidArgument)
	}
	if err := iqueue.CheckClient(in.rdb); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	return nil
}

// target is a queue the inspector opened: the operations of each of its
// partitions (one for a queue without partitions) and the name of its
// codec ("" when none is recorded).
type target struct {
	parts []*store.Queue
	codec string
}

// of returns the partition that holds the item with this ID.
func (t target) of(id string) *store.Queue {
	return t.parts[keys.PartitionOf(id, len(t.parts))]
}

// open validates the queue's name and checks that the queue exists: in
// the registry of queues, or with at least one of its keys in Redis. It
// returns the queue's partitions, as recorded in its meta hash, and its
// codec. One round trip (one per node on a Cluster).
func (in *Inspector) open(ctx context.Context, name string) (target, error) {
	if err := in.checkClient(); err != nil {
		return target{}, err
	}
	k, err := keys.New(name)
	if err != nil {
		return target{}, fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	q := in.c.Queue(k)
	p, err := q.Probe(ctx)
	if err != nil {
		return target{}, err
	}
	if !p.Registered && !p.Stored {
		return target{}, fmt.Errorf("no such queue (not in the registry of queues, no keys): %w", ErrNotFound)
	}
	t := target{parts: make([]*store.Queue, p.Partitions), codec: p.Codec}
	for i := range t.parts {
		t.parts[i] = in.c.Queue(k.Partition(i))
	}
	return t, nil
}

// openID is open for a call on one item: it validates id first, and
// returns the partition that holds it.
func (in *Inspector) openID(ctx context.Context, name, id string) (*store.Queue, string, error) {
	if _, err := iqueue.OfferID(id, true, nil); err != nil {
		return nil, "", err
	}
	t, err := in.open(ctx, name)
	if err != nil {
		return nil, "", err
	}
	return t.of(id), t.codec, nil
}

// wrap names the call and the queue in err.
func wrap(op, name string, err error) error {
	return fmt.Errorf("%s %q: %w", op, name, err)
}

// typed returns the queue t called name as a blocking queue of raw
// bytes, with its partitions, for the calls that do not depend on its
// type (Stats, Pause, Resume). blocking.New makes no network call and
// starts nothing, so the queue needs no Close.
func (in *Inspector) typed(name string, t target) *blocking.Queue[[]byte] {
	q := blocking.New[[]byte](in.rdb, name, blocking.WithCodec(codec.Raw()), blocking.WithPartitions(len(t.parts)))
	if c := iqueue.CoreOf(q); c != nil {
		c.LayoutKnown() // open just read it
	}
	return q
}

// Queues returns the name of every queue announced on this Redis, in name
// order: every queue that a process consumed, or transferred with
// delayed.New or transfer.Run, since the registry was last cleared. On a
// Cluster one registry covers every master. One round trip, O(N log N)
// for N queues; it never uses KEYS or SCAN.
func (in *Inspector) Queues(ctx context.Context) ([]string, error) {
	if err := in.checkClient(); err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	names, err := in.c.Queues(ctx)
	if err != nil {
		return nil, fmt.Errorf("queues: %w", err)
	}
	return names, nil
}

// Stats reads the queue's counts by state, its pause flag, its latency
// (how long the oldest ready item has waited since it fell due) and when
// its next delayed item or retry falls due, at one instant of the Redis
// server's clock. Two round trips (the check that the queue exists, then
// one read-only script), O(log N).
func (in *Inspector) Stats(ctx context.Context, queue string) (Stats, error) {
	t, err := in.open(ctx, queue)
	if err != nil {
		return Stats{}, wrap("stats", queue, err)
	}
	return in.typed(queue, t).Stats(ctx)
}

// Pause stops every process from handing out the queue's items, as
// blocking.Queue.Pause does: consumers wait (Receive and Consume from
// their next round trip, Take and Poll within milliseconds), while
// offers, transfers of due items and the reclaiming of expired leases go
// on. The flag lives in Redis until Resume. Pausing a paused queue is
// harmless. Two round trips, O(1).
func (in *Inspector) Pause(ctx context.Context, queue string) error {
	t, err := in.open(ctx, queue)
	if err != nil {
		return wrap("pause", queue, err)
	}
	return in.typed(queue, t).Pause(ctx)
}

// Resume undoes Pause: waiting consumers in every process go on at once.
// Resuming a queue that is not paused is harmless. Two round trips, O(1).
func (in *Inspector) Resume(ctx context.Context, queue string) error {
	t, err := in.open(ctx, queue)
	if err != nil {
		return wrap("resume", queue, err)
	}
	return in.typed(queue, t).Resume(ctx)
}
