package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/schedule"
	"github.com/redelay/redelay/internal/store"
)

// MaxScheduleNameLen bounds a schedule's name, in bytes.
const MaxScheduleNameLen = 200

// HeaderSchedule is the header a tick's item carries: the schedule's name.
const HeaderSchedule = "redelay-schedule"

// ScheduleInfo describes one recurring schedule (see
// delayed.ScheduleInfo, which has the same fields).
type ScheduleInfo struct {
	Name    string
	Spec    string
	Zone    string
	Missed  string
	Next    time.Time
	Last    time.Time
	Overdue bool
}

// Schedule creates or replaces the schedule name: v offered at each tick
// of spec, in loc (nil: UTC), missed ticks handled as missed says
// (schedule.Missed*). Schedules live in partition 0.
func (q *Queue) Schedule(ctx context.Context, name, spec string, v any, loc *time.Location, missed string) error {
	if err := q.Err(); err != nil {
		return err
	}
	c := q.parts[0]
	if err := checkScheduleName(name); err != nil {
		return fmt.Errorf("schedule %s: %w", q.Name(), err)
	}
	rec := schedule.Record{Spec: spec, Missed: schedule.Missed(missed)}
	if loc != nil {
		zone, err := schedule.ZoneName(loc, time.Now())
		if err != nil {
			return fmt.Errorf("schedule %s: %w; give a location from time.LoadLocation with an IANA name (such as \"Europe/Berlin\"), which every process reads the same: %w",
				q.Name(), err, ErrInvalidArgument)
		}
		rec.Zone = zone
	}
	switch schedule.Missed(missed) {
	case schedule.MissedLatest, schedule.MissedSkip, schedule.MissedAll:
	default:
		return fmt.Errorf("schedule %s: missed-tick policy %q: %w", q.Name(), missed, ErrInvalidArgument)
	}
	s, err := rec.Parsed()
	if err != nil {
		return fmt.Errorf("schedule %s: %w: %w", q.Name(), err, ErrInvalidArgument)
	}
	env, err := c.Encode("", v, map[string]string{HeaderSchedule: name}, nil, 0, 0, "")
	if err != nil {
		return fmt.Errorf("schedule %s: %w", q.Name(), err)
	}
	for range 3 { // compare-and-set: again when another process changed it meanwhile
		old, err := c.record(ctx, name)
		if err != nil {
			return fmt.Errorf("schedule %s in %s: %w", name, q.Name(), err)
		}
		now := old.now
		next := rec
		var drop []string
		if old.readable && old.rec.Spec == rec.Spec && old.rec.Zone == rec.Zone {
			next.Next, next.Recent = old.rec.Next, old.rec.Recent // same ticks: keep them
		} else {
			next.Next = s.Next(now).UnixMilli()
			if old.found {
				for _, t := range old.rec.Pending(now) {
					drop = append(drop, schedule.TickID(name, t))
				}
			}
		}
		ok, err := Call(ctx, c, func(ctx context.Context) (bool, error) {
			return c.Store.SchedulePut(ctx, name, old.raw, next.Encode(), env, schedule.DueMs(time.UnixMilli(next.Next)), drop)
		}, nil)
		if err != nil {
			return fmt.Errorf("schedule %s in %s: %w", name, q.Name(), err)
		}
		if ok {
			q.announceOffered(ctx, nil) // a producer: listed, its codec recorded
			return nil
		}
	}
	return fmt.Errorf("schedule %s in %s: changed by other processes three times while this call ran; try again", name, q.Name())
}

func checkScheduleName(name string) error {
	return checkName("schedule name", name, MaxScheduleNameLen)
}

// stored is a schedule's record as read, with the server's clock.
type stored struct {
	raw      string
	rec      schedule.Record
	found    bool
	readable bool
	now      time.Time
}

// record reads the record of schedule name, and the server's clock.
func (c *part) record(ctx context.Context, name string) (stored, error) {
	return Call(ctx, c, func(ctx context.Context) (stored, error) {
		now, err := c.Store.Client().Now(ctx)
		if err != nil {
			return stored{}, err
		}
		raw, found, err := c.Store.ScheduleRecord(ctx, name)
		if err != nil || !found {
			return stored{now: now}, err
		}
		rec, err := schedule.Decode(raw)
		return stored{raw: raw, rec: rec, found: true, readable: err == nil, now: now}, nil
	}, nil)
}

// Unschedule removes the schedule name and its pending ticks; false when
// there was none.
func (q *Queue) Unschedule(ctx context.Context, name string) (bool, error) {
	if err := q.Err(); err != nil {
		return false, err
	}
	c := q.parts[0]
	if err := checkScheduleName(name); err != nil {
		return false, fmt.Errorf("unschedule %s: %w", q.Name(), err)
	}
	for range 3 { // compare-and-set: again when a process advanced it meanwhile
		old, err := c.record(ctx, name)
		if err != nil {
			return false, fmt.Errorf("unschedule %s in %s: %w", name, q.Name(), err)
		}
		var drop []string
		for _, t := range old.rec.Pending(old.now) {
			drop = append(drop, schedule.TickID(name, t))
		}
		n, err := Call(ctx, c, func(ctx context.Context) (int64, error) {
			return c.Store.ScheduleRemove(ctx, name, old.raw, drop)
		}, nil)
		if err != nil {
			return false, fmt.Errorf("unschedule %s in %s: %w", name, q.Name(), err)
		}
		if n >= 0 {
			return n == 1, nil
		}
	}
	return false, fmt.Errorf("unschedule %s in %s: changed by other processes three times while this call ran; try again", name, q.Name())
}

// Schedules lists the queue's schedules by name.
func (q *Queue) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	if err := q.Err(); err != nil {
		return nil, err
	}
	c := q.parts[0]
	recs, err := Call(ctx, c, c.Store.ScheduleRecords, nil)
	if err != nil {
		return nil, fmt.Errorf("schedules of %s: %w", q.Name(), err)
	}
	now := c.now()
	out := make([]ScheduleInfo, 0, len(recs))
	for name, raw := range recs {
		rec, err := schedule.Decode(raw)
		if err != nil {
			return nil, fmt.Errorf("schedules of %s: %s: %w", q.Name(), name, Mark(ErrCorrupt, err))
		}
		next := rec.NextTick(now)
		out = append(out, ScheduleInfo{
			Name: name, Spec: rec.Spec, Zone: rec.TickZone(), Missed: string(rec.Policy()),
			Next: next, Last: rec.Last(now), Overdue: now.Sub(next) > schedule.OverdueAfter,
		})
	}
	slices.SortFunc(out, func(a, b ScheduleInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// RunSchedule offers, ready at once, one item with the value the schedule
// name's ticks carry, under a new ID (name, "@run-", and a random part),
// leaving the schedule and its next tick as they are; it returns the ID.
// ErrNotFound when the queue has no such schedule.
func (q *Queue) RunSchedule(ctx context.Context, name string) (string, error) {
	if err := q.Err(); err != nil {
		return "", err
	}
	if err := checkScheduleName(name); err != nil {
		return "", fmt.Errorf("run schedule %s: %w", q.Name(), err)
	}
	c := q.parts[0]
	type value struct {
		env   []byte
		found bool
	}
	v, err := Call(ctx, c, func(ctx context.Context) (value, error) {
		env, found, err := c.Store.ScheduleValue(ctx, name)
		return value{env, found}, err
	}, nil)
	if err != nil {
		return "", fmt.Errorf("run schedule %s in %s: %w", name, q.Name(), err)
	}
	if !v.found {
		return "", fmt.Errorf("run schedule %s in %s: no such schedule: %w", name, q.Name(), ErrNotFound)
	}
	id := name + "@run-" + NewID()
	env, ok := envelope.WithID(v.env, id)
	if !ok {
		return "", fmt.Errorf("run schedule %s in %s: its stored value is no envelope: %w", name, q.Name(), ErrCorrupt)
	}
	w := Now()
	p := q.route(id)
	if _, err := p.Offer(ctx, store.OfferItem{ID: id, Env: env, Mode: w.mode, US: w.us}); err != nil {
		return "", fmt.Errorf("run schedule %s in %s: %w", name, q.Name(), err)
	}
	return id, nil
}
