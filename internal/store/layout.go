package store

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
)

// Partitions records n as the queue's number of partitions in its meta
// hash unless one is recorded already, and returns the recorded number
// (partitions.lua). A queue of one partition records 1, so that a process
// opening it with more is refused whichever process comes first; a queue
// that holds items but no record (used before the record existed) is
// recorded as 1.
func (q *Partition) Partitions(ctx context.Context, n int) (int, error) {
	got, err := q.c.eval(ctx, lua.Partitions, q.partitionsKeys(), n).Text()
	if err != nil {
		return 0, err
	}
	return q.partitionsOf(got)
}

// partitionsKeys are the KEYS of partitions.lua: q's meta hash first.
func (q *Partition) partitionsKeys() []string {
	k := q.K
	return []string{k.Meta, k.Delayed, k.Items, k.Seq, k.Retry, k.Ready,
		k.Prio, k.Leases, k.Inflight, k.Claimed, k.DeadReady, k.DeadPrio, k.Schedules}
}

// StatsPartitions is Stats of q, and Partitions(n) of part0 (the queue's
// partition 0, q itself without partitions), in one round trip: the
// overview of many queues reads each in one.
func (q *Partition) StatsPartitions(ctx context.Context, part0 *Partition, n int) (Stats, int, error) {
	var parts, st *redis.Cmd
	_, _ = q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		parts = lua.Partitions.EvalSha(ctx, p, part0.partitionsKeys(), n)
		st = lua.Stats.EvalSha(ctx, p, q.statsKeys())
		return nil
	})
	if redis.HasErrorPrefix(parts.Err(), "NOSCRIPT") || redis.HasErrorPrefix(st.Err(), "NOSCRIPT") {
		got, err := part0.Partitions(ctx, n)
		if err != nil {
			return Stats{}, 0, err
		}
		s, err := q.Stats(ctx)
		return s, got, err
	}
	got, err := parts.Text()
	if err != nil {
		return Stats{}, 0, err
	}
	recorded, err := part0.partitionsOf(got)
	if err != nil {
		return Stats{}, 0, err
	}
	res, err := st.Int64Slice()
	if err != nil {
		return Stats{}, 0, err
	}
	s, err := statsOf(res)
	return s, recorded, err
}

// RecordedPartitions reads the queue's number of partitions from its meta
// hash (1 when none is recorded) and records nothing: for a process that
// follows the queue's layout rather than opening it with one.
func (q *Partition) RecordedPartitions(ctx context.Context) (int, error) {
	got, err := q.c.rdb.HGet(ctx, q.K.Meta, keys.MetaPartitions).Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	return q.partitionsOf(got)
}

// partitionsOf parses a recorded number of partitions.
func (q *Partition) partitionsOf(got string) (int, error) {
	v, err := strconv.Atoi(got)
	if err != nil || v < 1 || v > keys.MaxPartitions {
		return 0, errors.New("field " + keys.MetaPartitions + " of " + q.K.Meta + " is no number of partitions: " + strconv.Quote(got))
	}
	return v, nil
}
