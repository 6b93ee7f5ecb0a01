package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// Limits of the settings, checked by the faces' options.
const (
	MaxBatchSize  = mover.MaxBatchSize
	MaxPartitions = keys.MaxPartitions
)

// FollowOptions are the settings of Follow.
type FollowOptions struct {
	BatchSize int
	Sweep     time.Duration
	Logger    *slog.Logger
	Telemetry telemetry.Config
	Dead      bool   // transfer the dead-letter queues too
	Prefix    string // the queues' key prefix ("": the default)
}

// Follow transfers due items and reclaims expired leases of the named
// queues (every partition each was recorded with, and with o.Dead their
// dead letters) until ctx ends, and returns ctx's error. The number of
// partitions of each queue is read from Redis, again after failures.
func Follow(ctx context.Context, rdb redis.UniversalClient, names []string, o FollowOptions, optErr error) error {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	var errs []error
	if err := CheckClient(rdb); err != nil {
		errs = append(errs, err)
	}
	if len(names) == 0 {
		errs = append(errs, errors.New("no queue named"))
	}
	var ks []keys.Set
	for _, name := range names {
		k, err := keys.For(o.Prefix, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ks = append(ks, k)
	}
	if optErr != nil {
		errs = append(errs, optErr)
	}
	if len(errs) > 0 {
		return fmt.Errorf("transfer: %w: %w", ErrInvalidQueue, errors.Join(errs...))
	}
	c := store.New(rdb)
	o.Telemetry.ServerAddress, o.Telemetry.ServerPort = telemetry.ServerOf(rdb)
	o.Telemetry.ErrorType = ErrorType
	var regs []*mover.Registration
	defer func() {
		for _, r := range regs {
			r.Close()
		}
	}()
	var all []keys.Set // every partition of every queue, and its dead letters
	for _, k := range ks {
		n, err := recordedPartitions(ctx, c.Partition(k), o.Logger)
		if err != nil {
			return fmt.Errorf("transfer: %w", err)
		}
		for i := range n {
			p := k.Partition(i)
			all = append(all, p)
			if o.Dead {
				all = append(all, p.Dead())
			}
		}
	}
	for _, k := range all {
		r, err := mover.Register(mover.Target{
			Queue: c.Partition(k), BatchSize: o.BatchSize, Sweep: o.Sweep, Logger: o.Logger,
			Telemetry: telemetry.New(o.Telemetry, k.Name), Announce: k.Part == 0,
		})
		if err != nil {
			return fmt.Errorf("transfer %s: %w: %w", k.Name, ErrInvalidQueue, err)
		}
		regs = append(regs, r)
	}
	<-ctx.Done()
	return fmt.Errorf("transfer: %w", ctx.Err())
}

// recordedPartitions reads a queue's number of partitions, again after
// each failure (with backoff) until ctx ends.
func recordedPartitions(ctx context.Context, q *store.Partition, log *slog.Logger) (int, error) {
	for failures := 1; ; failures++ {
		n, err := q.RecordedPartitions(ctx)
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		wait := min(time.Duration(failures)*200*time.Millisecond, 5*time.Second)
		log.Warn("redelay: could not read the queue's number of partitions; retrying", "queue", q.K.Name, "err", err, "retry_in", wait)
		Sleep(ctx, wait)
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
}

// Probe opens the queue name under the key prefix ("": the default) as
// Redis holds it (the inspector): with the number of partitions recorded,
// and the raw codec; codecName is the codec its consumers announced (""
// when unknown). The queue is not found (ErrNotFound) when it is neither
// registered nor has keys.
func Probe(ctx context.Context, rdb redis.UniversalClient, prefix, name string) (q *Queue, codecName string, err error) {
	k, err := keys.For(prefix, name)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	p, err := store.New(rdb).Partition(k).Probe(ctx)
	if err != nil {
		return nil, "", err
	}
	if !p.Registered && !p.Stored {
		return nil, "", fmt.Errorf("no such queue (not in the registry of queues, no keys): %w", ErrNotFound)
	}
	q = Open(rdb, name, Config{Codec: codec.Raw(), Partitions: p.Partitions, Prefix: prefix}, nil)
	q.LayoutKnown() // just read
	return q, p.Codec, nil
}

// DefaultPrefix starts the keys of a queue opened without a prefix.
const DefaultPrefix = keys.Prefix

// CheckPrefix says why p cannot be a key prefix.
func CheckPrefix(p string) error { return keys.ValidatePrefix(p) }

// Queues lists the names of the queues in the registry of rdb's server
// under the key prefix ("": the default).
func Queues(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]string, error) {
	return store.New(rdb).Queues(ctx, prefix)
}

// Eviction returns the maxmemory-policy of rdb's server (see
// Queue.Eviction).
func Eviction(ctx context.Context, rdb redis.UniversalClient) string {
	return mover.ServerOf(rdb).Eviction(ctx, store.New(rdb))
}

// ServerInfo reads what INFO says of rdb's deployment (see
// store.Client.Info).
func ServerInfo(ctx context.Context, rdb redis.UniversalClient) (store.ServerInfo, error) {
	info, err := store.New(rdb).Info(ctx)
	if store.InfoRefused(err) {
		err = fmt.Errorf("%w: %w", ErrInfoRefused, err)
	}
	return info, err
}

// Forget forgets the queue name under the key prefix ("": the default)
// once it holds nothing: what it leaves behind (settings, codec, totals,
// history, counters) is deleted and it leaves the registry of queues
// (store.Client.ForgetQueue). A queue that holds items is refused with
// ErrNotEmpty, saying how many.
func Forget(ctx context.Context, rdb redis.UniversalClient, prefix, name string) error {
	k, err := keys.For(prefix, name)
	if err != nil {
		return fmt.Errorf("%w: %w", err, ErrInvalidArgument)
	}
	held, err := store.New(rdb).ForgetQueue(ctx, k, 0)
	if err != nil {
		return err
	}
	if held > 0 {
		return fmt.Errorf("it holds %d items (or schedules): purge or consume them first: %w", held, ErrNotEmpty)
	}
	return nil
}
