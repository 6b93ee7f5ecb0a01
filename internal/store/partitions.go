package store

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
)

// Partitions records n as the queue's number of partitions in its meta
// hash unless one is recorded already, and returns the recorded number
// (1 when none is). n <= 1 records nothing: a queue of one partition keeps
// the layout it always had, and pays one HGET. Plain commands, not a
// pipeline: go-redis keeps pipelines on connections of their own.
func (q *Queue) Partitions(ctx context.Context, n int) (int, error) {
	if n > 1 {
		if err := q.c.rdb.HSetNX(ctx, q.K.Meta, keys.MetaPartitions, n).Err(); err != nil {
			return 0, err
		}
	}
	got, err := q.c.rdb.HGet(ctx, q.K.Meta, keys.MetaPartitions).Result()
	if errors.Is(err, redis.Nil) {
		return 1, nil
	}
	if err != nil {
		return 0, err
	}
	v, err := strconv.Atoi(got)
	if err != nil || v < 1 {
		return 0, errors.New("field " + keys.MetaPartitions + " of " + q.K.Meta + " is not a positive number: " + strconv.Quote(got))
	}
	return v, nil
}
