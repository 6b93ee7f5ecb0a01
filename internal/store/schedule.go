package store

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/lua"
)

// The Redis side of recurring schedules (see internal/schedule): records
// are opaque JSON to the scripts, which compare and set them.

// ScheduleRecord reads schedule name's record; found is false when there
// is none.
func (q *Partition) ScheduleRecord(ctx context.Context, name string) (rec string, found bool, err error) {
	rec, err = q.c.rdb.HGet(ctx, q.K.Schedules, name).Result()
	if errors.Is(err, redis.Nil) {
		return "", false, nil
	}
	return rec, err == nil, err
}

// ScheduleRecords reads every schedule's record, by name.
func (q *Partition) ScheduleRecords(ctx context.Context) (map[string]string, error) {
	return q.c.rdb.HGetAll(ctx, q.K.Schedules).Result()
}

// DueSchedules returns up to limit names of schedules whose next tick must
// be materialized by nowMs.
func (q *Partition) DueSchedules(ctx context.Context, nowMs int64, limit int) ([]string, error) {
	return q.c.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: q.K.ScheduleDue, Start: "-inf", Stop: strconv.FormatInt(nowMs, 10), ByScore: true, Count: int64(limit),
	}).Result()
}

// SchedulePut stores schedule name's record and tick envelope if its
// record is still old ("" for none), and removes the pending ticks drop
// (schedule_put.lua). false: the record changed meanwhile.
func (q *Partition) SchedulePut(ctx context.Context, name, old, rec string, env []byte, dueMs int64, drop []string) (bool, error) {
	k := q.K
	args := []any{k.Wake, name, old, rec, env, dueMs}
	for _, id := range drop {
		args = append(args, id)
	}
	n, err := q.c.eval(ctx, lua.SchedulePut, []string{k.Schedules, k.ScheduleValues, k.ScheduleDue, k.Delayed, k.Items}, args...).Int64()
	return n == 1, err
}

// Tick is one tick of a schedule to materialize.
type Tick struct {
	ID string
	US int64 // due time, Unix µs
}

// ScheduleAdvance offers ticks and sets schedule name's record to rec if
// it is still old (schedule_advance.lua); it returns the number of ticks
// offered, or -1 when the record changed or is gone.
func (q *Partition) ScheduleAdvance(ctx context.Context, name, old, rec string, dueMs int64, ticks []Tick) (int64, error) {
	k := q.K
	args := []any{k.Wake, name, old, rec, dueMs}
	for _, t := range ticks {
		args = append(args, t.ID, t.US)
	}
	return q.c.eval(ctx, lua.ScheduleAdvance,
		[]string{k.Delayed, k.Items, k.Seq, k.Ready, k.Retry, k.Schedules, k.ScheduleValues, k.ScheduleDue, k.Prio}, args...).Int64()
}

// ScheduleRemove deletes schedule name and its pending ticks drop if its
// record is still old ("" for none) (schedule_remove.lua): 1 deleted, 0
// there was none, -1 the record changed meanwhile.
func (q *Partition) ScheduleRemove(ctx context.Context, name, old string, drop []string) (int64, error) {
	k := q.K
	args := []any{name, old}
	for _, id := range drop {
		args = append(args, id)
	}
	return q.c.eval(ctx, lua.ScheduleRemove, []string{k.Schedules, k.ScheduleValues, k.ScheduleDue, k.Delayed, k.Items}, args...).Int64()
}

// SchedulePark sets schedule name aside until untilMs if its record is
// still old ("" for none: its due entry is removed instead)
// (schedule_park.lua): 1 set aside, 0 due entry removed, -1 the record
// changed meanwhile.
func (q *Partition) SchedulePark(ctx context.Context, name, old string, untilMs int64) (int64, error) {
	k := q.K
	return q.c.eval(ctx, lua.SchedulePark, []string{k.Schedules, k.ScheduleDue}, name, old, untilMs).Int64()
}

// Now reads the Redis server's clock.
func (c *Client) Now(ctx context.Context) (time.Time, error) {
	return c.rdb.Time(ctx).Result()
}

// ScheduleValue reads the envelope the ticks of schedule name carry (its
// ID empty); found is false when there is none.
func (q *Partition) ScheduleValue(ctx context.Context, name string) (env []byte, found bool, err error) {
	b, err := q.c.rdb.HGet(ctx, q.K.ScheduleValues, name).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	return b, err == nil, err
}
