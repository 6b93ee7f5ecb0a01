package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	iqueue "github.com/redelay/redelay/internal/queue"
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
	// ErrInvalidQueue: the Inspector was made with a bad option (a key
	// prefix with braces or whitespace, or empty); every call returns it.
	// It is blocking.ErrInvalidQueue.
	ErrInvalidQueue = blocking.ErrInvalidQueue
	// ErrNotEmpty: Forget of a queue that still holds items or
	// schedules. Nothing was changed.
	ErrNotEmpty = iqueue.ErrNotEmpty
	// ErrInfoRefused: Server's INFO was refused by the server (an ACL
	// without @dangerous, or a renamed command); asking again will not
	// help.
	ErrInfoRefused = iqueue.ErrInfoRefused
)

// Stats are a queue's counts by state and its timings: the type of
// blocking.Queue.Stats.
type Stats = blocking.Stats

// Inspector reads and changes the queues of one Redis deployment without
// knowing their Go types. It is safe for concurrent use, holds nothing but
// its client, starts no goroutine and needs no Close.
type Inspector struct {
	rdb    redis.UniversalClient
	prefix string // "": the default, "redelay"
	err    error  // a bad option, returned by every call
}

// Option configures an Inspector.
type Option func(*Inspector)

// WithPrefix makes the Inspector see only the queues whose keys start with
// prefix, the one their processes gave blocking.WithPrefix. Default: the
// queues of the default prefix, "redelay". A prefix that is empty, longer
// than 64 bytes, or holds braces, whitespace, control characters or a ':'
// at either end makes every call return ErrInvalidQueue.
func WithPrefix(prefix string) Option {
	return func(in *Inspector) {
		if err := iqueue.CheckPrefix(prefix); err != nil {
			in.err = fmt.Errorf("%w: WithPrefix: %w", ErrInvalidQueue, err)
			return
		}
		in.prefix = prefix
	}
}

// New returns an Inspector of the queues on rdb: a *redis.Client, a
// *redis.ClusterClient or a failover (Sentinel) client. New makes no
// network call; a nil client or a *redis.Ring (which would split a queue
// between shards) makes every call return ErrInvalidArgument.
func New(rdb redis.UniversalClient, opts ...Option) *Inspector {
	in := &Inspector{rdb: rdb}
	for _, o := range opts {
		if o != nil {
			o(in)
		}
	}
	return in
}

// Err reports a bad option given to New (wrapping ErrInvalidQueue), which
// every call would return; nil when the options are good. It makes no
// network call.
func (in *Inspector) Err() error {
	if in == nil {
		return fmt.Errorf("nil Inspector: %w", ErrInvalidArgument)
	}
	return in.err
}

// Prefix is the key prefix of the queues the Inspector sees: "redelay"
// unless WithPrefix said otherwise.
func (in *Inspector) Prefix() string {
	if in == nil || in.prefix == "" {
		return iqueue.DefaultPrefix
	}
	return in.prefix
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
	return iqueue.Eviction(ctx, in.rdb), nil
}

// checkClient says why in cannot make calls, if it cannot.
func (in *Inspector) checkClient() error {
	if in == nil {
		return fmt.Errorf("nil Inspector: %w", ErrInvalidArgument)
	}
	if in.err != nil {
		return in.err
	}
	if err := iqueue.CheckClient(in.rdb); err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	return nil
}

// open validates the queue's name and checks that the queue exists: in
// the registry of queues, or with at least one of its keys in Redis. It
// returns the queue's partitions, as recorded in its meta hash, and its
// codec. One round trip (one per node on a Cluster).
func (in *Inspector) open(ctx context.Context, name string) (*iqueue.Queue, string, error) {
	if err := in.checkClient(); err != nil {
		return nil, "", err
	}
	return iqueue.Probe(ctx, in.rdb, in.prefix, name)
}

// openID is open for a call on one item: it validates id first, and
// returns the partition that holds it.
func (in *Inspector) openID(ctx context.Context, name, id string) (*iqueue.Queue, string, error) {
	if err := iqueue.CheckID(id); err != nil {
		return nil, "", err
	}
	return in.open(ctx, name)
}

// wrap names the call and the queue in err.
func wrap(op, name string, err error) error {
	return fmt.Errorf("%s %q: %w", op, name, err)
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
	names, err := iqueue.Queues(ctx, in.rdb, in.prefix)
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
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return Stats{}, wrap("stats", queue, err)
	}
	st, err := q.Stats(ctx)
	return Stats(st), err
}

// Pause stops every process from handing out the queue's items, as
// blocking.Queue.Pause does: consumers wait (Receive and Consume from
// their next round trip, Take and Poll within milliseconds), while
// offers, transfers of due items and the reclaiming of expired leases go
// on. The flag lives in Redis until Resume. Pausing a paused queue is
// harmless. Two round trips, O(1).
func (in *Inspector) Pause(ctx context.Context, queue string) error {
	return in.setPaused(ctx, "pause", queue, true)
}

// Resume undoes Pause: waiting consumers in every process go on at once.
// Resuming a queue that is not paused is harmless. Two round trips, O(1).
func (in *Inspector) Resume(ctx context.Context, queue string) error {
	return in.setPaused(ctx, "resume", queue, false)
}

// setPaused pauses or resumes a queue for every process.
func (in *Inspector) setPaused(ctx context.Context, op, queue string, paused bool) error {
	q, _, err := in.open(ctx, queue)
	if err == nil {
		if err = q.SetPaused(ctx, paused); err != nil {
			return fmt.Errorf("%s %s: %w", op, queue, err)
		}
		return nil
	}
	return wrap(op, queue, err)
}

// Consumer is a process consuming a queue (blocking.Queue.Consume), as it
// recorded itself.
type Consumer struct {
	Queue       string    // the queue it consumes
	Host        string    // os.Hostname of its process
	PID         int       // its process ID
	Concurrency int       // its handlers (blocking.WithConcurrency)
	InFlight    int       // deliveries its handlers held at its last refresh
	Started     time.Time // when its Consume started
	LastSeen    time.Time // its last refresh, every 5 s while it runs (Redis server clock)
}

// Consumers lists the processes consuming the queues of the Inspector's
// prefix: every Consume records itself, refreshes its record every 5 s
// and removes it when it returns; one whose process crashed (or lost
// Redis) is not listed once 30 s have passed without a refresh. Sorted by
// queue, host, PID and start. One round trip, O(N) for N records.
func (in *Inspector) Consumers(ctx context.Context) ([]Consumer, error) {
	if err := in.checkClient(); err != nil {
		return nil, fmt.Errorf("consumers: %w", err)
	}
	got, err := iqueue.Consumers(ctx, in.rdb, in.prefix)
	if err != nil {
		return nil, fmt.Errorf("consumers: %w", err)
	}
	out := make([]Consumer, len(got))
	for i, c := range got {
		out[i] = Consumer(c)
	}
	return out, nil
}

// ServerInfo describes the Redis deployment an Inspector reads, from INFO:
// of the server of a single client, summed over the masters of a Cluster.
type ServerInfo struct {
	Addr       string // the address the client was given, without credentials (a Cluster's first)
	Version    string // redis_version
	Mode       string // redis_mode: "standalone" or "cluster"
	Masters    int    // 1, or the masters of a Cluster
	UsedMemory int64  // bytes in use (used_memory)
	MaxMemory  int64  // maxmemory, bytes; 0: no limit
	Clients    int64  // connected clients
	Eviction   string // maxmemory-policy (see Eviction)
}

// Server reads ServerInfo with INFO server, memory and clients: one round
// trip per master. A server that refuses INFO (an ACL without @dangerous)
// returns its error, wrapping ErrInfoRefused.
func (in *Inspector) Server(ctx context.Context) (ServerInfo, error) {
	if err := in.checkClient(); err != nil {
		return ServerInfo{}, fmt.Errorf("server: %w", err)
	}
	got, err := iqueue.ServerInfo(ctx, in.rdb)
	if err != nil {
		return ServerInfo{}, fmt.Errorf("server: %w", err)
	}
	return ServerInfo(got), nil
}

// QueueStats is the stats of one queue of AllStats: Err says why they
// could not be read (a name in the registry that is no queue name wraps
// ErrInvalidArgument).
type QueueStats struct {
	Queue string
	Stats Stats
	Err   error
}

// AllStats reads the stats of every queue of Queues in a bounded number
// of round trips, however many queues there are: the registry, then one
// pipeline of every queue's stats script (one round trip per master of a
// Cluster), and one more for the queues that have partitions. What Stats
// reads for one queue, in name order.
func (in *Inspector) AllStats(ctx context.Context) ([]QueueStats, error) {
	names, err := in.Queues(ctx)
	if err != nil {
		return nil, err
	}
	stats, errs := iqueue.StatsOf(ctx, in.rdb, in.prefix, names)
	out := make([]QueueStats, len(names))
	for i, name := range names {
		out[i] = QueueStats{Queue: name, Stats: Stats(stats[i])}
		if errs[i] != nil {
			out[i].Err = wrap("stats", name, errs[i])
		}
	}
	return out, nil
}

// Forget removes a queue that holds nothing from this Redis: what it
// leaves behind (its settings, recorded codec, totals and history, offer
// counter) is deleted and it leaves the registry of queues, so Queues no
// longer lists it. A queue that holds any item (pending, ready, in
// flight, dead) or a recurring schedule is refused with ErrNotEmpty,
// changing nothing; ErrNotFound when there is no such
// queue. A process that uses the queue again brings it back. Queues that
// hold nothing and that no process announced for the retention period
// (blocking.WithRetention) are forgotten by the processes' own sweep.
func (in *Inspector) Forget(ctx context.Context, queue string) error {
	if _, _, err := in.open(ctx, queue); err != nil {
		return wrap("forget", queue, err)
	}
	if err := iqueue.Forget(ctx, in.rdb, in.prefix, queue); err != nil {
		return wrap("forget", queue, err)
	}
	return nil
}
