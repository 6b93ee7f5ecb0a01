package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redelay/redelay/internal/keys"

	"github.com/redelay/redelay/internal/lua"
)

// The operations on a partition's groups (blocking.WithGroup; see Groups
// in internal/lua/prelude.lua).

// Group is one group's counts, as groups.lua reads them.
type Group struct {
	Key      string
	Ready    int64
	InFlight int64
	Paused   bool
}

// SetGroupLimits records the queue's group limits for every process
// (WithGroupConcurrency, WithGroupRateLimit; 0: none), as receive.lua does
// on each call of a Consume that sets them.
func (q *Partition) SetGroupLimits(ctx context.Context, concurrency int, interval time.Duration) error {
	return q.setMetaInts(ctx, []metaInt{{keys.MetaGroupLimit, int64(concurrency)}, {keys.MetaGroupInterval, interval.Microseconds()}})
}

// Groups reads up to n groups from offset, largest (ready + in flight)
// first, and how many groups hold items.
func (q *Partition) Groups(ctx context.Context, offset, n int64) ([]Group, int64, error) {
	res, err := q.c.eval(ctx, lua.Groups, []string{q.K.Ready}, offset, n).Slice()
	if err != nil {
		return nil, 0, err
	}
	if len(res) == 0 || (len(res)-1)%4 != 0 {
		return nil, 0, fmt.Errorf("unexpected groups reply of %d values", len(res))
	}
	total, _ := res[0].(int64)
	out := make([]Group, 0, (len(res)-1)/4)
	for i := 1; i < len(res); i += 4 {
		key, _ := res[i].(string)
		ready, _ := res[i+1].(int64)
		flight, _ := res[i+2].(int64)
		paused, _ := res[i+3].(int64)
		out = append(out, Group{Key: key, Ready: ready, InFlight: flight, Paused: paused == 1})
	}
	return out, total, nil
}

// SetGroupPaused pauses or resumes group g (group_pause.lua), and reports
// whether that changed its state.
func (q *Partition) SetGroupPaused(ctx context.Context, g string, paused bool) (bool, error) {
	op := "resume"
	if paused {
		op = "pause"
	}
	n, err := q.c.eval(ctx, lua.GroupPause, []string{q.K.Ready}, op, g).Int64()
	return n == 1, err
}

// PurgeGroup drops the ready items of group g (group_purge.lua) and
// returns how many there were.
func (q *Partition) PurgeGroup(ctx context.Context, g string) (int64, error) {
	return q.c.eval(ctx, lua.GroupPurge, []string{q.K.Ready}, g, "").Int64()
}

// listGroups reads up to limit of the ready items held in groups from
// offset (group_list.lua): group by group, largest first.
func (q *Partition) listGroups(ctx context.Context, offset, limit int) ([]Entry, error) {
	res, err := q.c.eval(ctx, lua.GroupList, []string{q.K.Ready}, offset, limit).StringSlice()
	if err != nil {
		return nil, err
	}
	if len(res)%3 != 0 {
		return nil, fmt.Errorf("unexpected group list reply of %d values", len(res))
	}
	out := make([]Entry, 0, len(res)/3)
	for i := 0; i < len(res); i += 3 {
		out = append(out, Entry{Group: res[i], InGroup: true, Key: res[i+1], Data: []byte(res[i+2])})
	}
	return out, nil
}
