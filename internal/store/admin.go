package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
)

// Administration of a whole queue: pause, purge, the codec registry and
// the list of known queues.

// SetPaused pauses or resumes the queue for every process (pause.lua) and
// reports whether the flag changed.
func (q *Partition) SetPaused(ctx context.Context, paused bool) (bool, error) {
	flag := "0"
	if paused {
		flag = "1"
	}
	n, err := q.c.eval(ctx, lua.Pause, []string{q.K.Meta}, q.K.Wake, flag).Int64()
	return n == 1, err
}

// Paused reads the queue's pause flag.
func (q *Partition) Paused(ctx context.Context) (bool, error) {
	return q.c.rdb.HExists(ctx, q.K.Meta, keys.MetaPaused).Result()
}

// Part names a set of a queue's keys that Purge drops together.
type Part int

// Parts of a queue.
const (
	PartDelayed  Part = iota // the delayed set and its items hash
	PartRetry                // the retry set
	PartReady                // the ready list
	PartInflight             // the leases, the in-flight items, the claimed list
	PartDead                 // the dead letters: the dead-letter queue's ready list and priority set
)

// Purge drops every item of the parts, atomically, and returns how many
// there were (purge.lua).
func (q *Partition) Purge(ctx context.Context, parts ...Part) (int64, error) {
	k := q.K
	var ks []string
	var count []any
	// how a key counts (purge.lua): "1" its entries are items, "0" they
	// are not (an index), "ready" the ready list, followed by its priority
	// set (counted as ready_len counts them).
	add := func(key, how string) {
		ks = append(ks, key)
		count = append(count, how)
	}
	for _, p := range parts {
		switch p {
		case PartDelayed:
			add(k.Delayed, "1")
			add(k.Items, "0")
		case PartRetry:
			add(k.Retry, "1")
		case PartReady:
			add(k.Ready, "ready")
			add(k.Prio, "0")
		case PartInflight:
			add(k.Inflight, "1")
			add(k.Leases, "0")
			add(k.Claimed, "1")
			add(k.Seen, "0")
			add(k.GFlight, "0")
			add(k.GTok, "0")
		case PartDead:
			add(k.DeadReady, "ready")
			add(k.DeadPrio, "0")
		}
	}
	if len(ks) == 0 {
		return 0, nil
	}
	return q.c.eval(ctx, lua.Purge, ks, count...).Int64()
}

// Announce records the queue in the registry of queues (its keys' Registry),
// with its codec's name in its meta hash when codec is not empty: in place
// of any recorded (a consumer's), or only when none is (a producer's,
// which must not hide the codec the consumers read with). Two commands, on
// different Cluster slots: one round trip per node.
func (q *Partition) Announce(ctx context.Context, codec string, replace bool) error {
	_, err := q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAdd(ctx, q.K.Registry, redis.Z{Score: float64(time.Now().UnixMilli()), Member: q.K.Name})
		switch {
		case codec == "":
		case replace:
			p.HSet(ctx, q.K.Meta, keys.MetaCodec, codec)
		default:
			p.HSetNX(ctx, q.K.Meta, keys.MetaCodec, codec)
		}
		return nil
	})
	return err
}

// Queues returns the names in the registry of queues under prefix ("":
// the default), in name order.
func (c *Client) Queues(ctx context.Context, prefix string) ([]string, error) {
	names, err := c.rdb.ZRange(ctx, keys.RegistryOf(prefix), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

// PutConsumer records (again) the consumer id in the registry of
// consumers under prefix, stamped with the server's clock; with sweep > 0
// it also deletes the records not seen for sweep (consumers.lua).
func (c *Client) PutConsumer(ctx context.Context, prefix, id string, record []byte, sweep time.Duration) error {
	return c.eval(ctx, lua.Consumers, []string{keys.ConsumersOf(prefix)}, "put", id, record, sweep.Milliseconds()).Err()
}

// DeleteConsumer removes the consumer id from the registry of consumers.
func (c *Client) DeleteConsumer(ctx context.Context, prefix, id string) error {
	return c.rdb.HDel(ctx, keys.ConsumersOf(prefix), id).Err()
}

// ConsumerRecord is one record of the registry of consumers: when it was
// last seen (server clock) and the JSON its process wrote.
type ConsumerRecord struct {
	ID       string
	LastSeen time.Time
	JSON     []byte
}

// Consumers returns the server's clock and every record of the registry
// of consumers under prefix, unreadable ones left out.
func (c *Client) Consumers(ctx context.Context, prefix string) (time.Time, []ConsumerRecord, error) {
	res, err := c.eval(ctx, lua.Consumers, []string{keys.ConsumersOf(prefix)}, "list").StringSlice()
	if err != nil {
		return time.Time{}, nil, err
	}
	if len(res) == 0 {
		return time.Time{}, nil, fmt.Errorf("unexpected consumers reply %q", res)
	}
	nowMs, err := strconv.ParseInt(res[0], 10, 64)
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("unexpected consumers reply %q", res[0])
	}
	var out []ConsumerRecord
	for i := 1; i+1 < len(res); i += 2 {
		seen, rec, ok := strings.Cut(res[i+1], " ")
		ms, err := strconv.ParseInt(seen, 10, 64)
		if !ok || err != nil {
			continue
		}
		out = append(out, ConsumerRecord{ID: res[i], LastSeen: time.UnixMilli(ms), JSON: []byte(rec)})
	}
	return time.UnixMilli(nowMs), out, nil
}

// Forget deletes what the partition leaves behind once it holds nothing
// (forget.lua), and returns 0; else how many items it holds, and it
// changes nothing.
func (q *Partition) Forget(ctx context.Context) (int64, error) {
	k, d := q.K, q.K.Dead()
	ks := []string{
		k.Delayed, k.Retry, k.Prio, k.Inflight, k.Claimed, k.Schedules,
		d.Delayed, d.Retry, d.Prio, d.Inflight, d.Claimed,
		k.Ready, d.Ready,
		k.Meta, k.Seq, k.Seen, k.History, k.Leases, k.Items, k.Rate, k.Slots, k.ScheduleValues, k.ScheduleDue,
		d.Meta, d.Seq, d.Seen, d.History, d.Leases, d.Items, d.Rate, d.Slots,
		k.GTurn, k.GSize, k.GFlight, k.GTok, k.GPaused, k.GWait,
		d.GTurn, d.GSize, d.GFlight, d.GTok, d.GPaused, d.GWait,
	}
	return q.c.eval(ctx, lua.Forget, ks).Int64()
}

// Unannounce removes the queue from the registry of queues when it was
// last announced before ms (Unix ms), or whatever its score when ms is 0.
func (q *Partition) Unannounce(ctx context.Context, ms int64) (bool, error) {
	if ms == 0 {
		n, err := q.c.rdb.ZRem(ctx, q.K.Registry, q.K.Name).Result()
		return n == 1, err
	}
	n, err := q.c.eval(ctx, lua.Unannounce, []string{q.K.Registry}, q.K.Name, ms).Int64()
	return n == 1, err
}

// ForgetQueue forgets the queue of keys k (partition 0's) once it holds
// nothing: every partition's leftovers are deleted (Forget), partition 0
// last (its meta hash records the number of partitions), then the queue
// leaves the registry of queues: whatever its score when announcedBefore
// is 0, else only when no process announced it since (Unix ms; the
// retention sweep). It returns how many items the queue holds when it
// holds some, and then changes nothing more (partitions already emptied
// of leftovers stay so).
func (c *Client) ForgetQueue(ctx context.Context, k keys.Set, announcedBefore int64) (held int64, err error) {
	p0 := c.Partition(k)
	n, err := p0.RecordedPartitions(ctx)
	if err != nil {
		return 0, err
	}
	for i := n - 1; i >= 0; i-- {
		held, err := c.Partition(k.Partition(i)).Forget(ctx)
		if err != nil || held > 0 {
			return held, err
		}
	}
	_, err = p0.Unannounce(ctx, announcedBefore)
	return 0, err
}

// StaleQueues returns up to limit names of the registry of queues under
// prefix that no process announced since beforeMs (Unix ms), oldest first,
// from the offset-th.
func (c *Client) StaleQueues(ctx context.Context, prefix string, beforeMs, offset int64, limit int) ([]string, error) {
	return c.rdb.ZRangeByScore(ctx, keys.RegistryOf(prefix), &redis.ZRangeBy{
		Min: "-inf", Max: "(" + strconv.FormatInt(beforeMs, 10), Offset: offset, Count: int64(limit),
	}).Result()
}
