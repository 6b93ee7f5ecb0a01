package transfer

import (
	"context"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/redelay/redelay/internal/schedule"
	"github.com/redelay/redelay/internal/store"
)

// dueBatch bounds how many schedules one run materializes.
const dueBatch = 50

// advanceSchedules materializes the next ticks of the queue's schedules
// that are due for it at now (the server's clock), and returns when the
// earliest of them is due again (Unix ms; -1 when none was advanced).
// Every process's worker does this; the script's compare-and-set makes
// each tick happen once. Errors are logged: the sweep tries again.
func (w *worker) advanceSchedules(ctx context.Context, now time.Time) int64 {
	q := w.t.Queue
	names, err := call(ctx, w, func(ctx context.Context) ([]string, error) {
		return q.DueSchedules(ctx, now.UnixMilli(), dueBatch)
	})
	if err != nil {
		w.t.Logger.Warn("redelay: reading due schedules failed; retrying on the next run", "queue", q.K.Name, "err", err)
		return -1
	}
	earliest := int64(-1)
	for _, name := range names {
		due, ok := w.advance(ctx, name, now)
		if ok && (earliest < 0 || due < earliest) {
			earliest = due
		}
	}
	if len(names) == dueBatch { // more may be due: run again at once
		earliest = now.UnixMilli() + 1
	}
	return earliest
}

// advance materializes one schedule's ticks: read its record, plan, and
// compare-and-set (again, a few times, when another process advanced it
// meanwhile).
func (w *worker) advance(ctx context.Context, name string, now time.Time) (dueMs int64, ok bool) {
	q := w.t.Queue
	log := w.t.Logger.With("queue", q.K.Name, "schedule", name)
	for range 3 {
		type read struct {
			rec   string
			found bool
		}
		r, err := call(ctx, w, func(ctx context.Context) (read, error) {
			rec, found, err := q.ScheduleRecord(ctx, name)
			return read{rec, found}, err
		})
		if err != nil || !r.found {
			return 0, false
		}
		rec, err := schedule.Decode(r.rec)
		var s cron.Schedule
		if err == nil {
			s, err = w.parsed(rec)
		}
		if err != nil {
			log.Error("redelay: a schedule's record cannot be read; it does not fire until it is scheduled again", "err", err)
			return 0, false
		}
		ticks, next, due, err := rec.Advance(s, now)
		if err != nil {
			log.Error("redelay: a schedule's record cannot be read; it does not fire until it is scheduled again", "err", err)
			return 0, false
		}
		items := make([]store.Tick, len(ticks))
		for i, t := range ticks {
			items[i] = store.Tick{ID: schedule.TickID(name, t), US: t.UnixMicro()}
		}
		n, err := call(ctx, w, func(ctx context.Context) (int64, error) {
			return q.ScheduleAdvance(ctx, name, r.rec, next.Encode(), due, items)
		})
		if err != nil {
			log.Warn("redelay: materializing a schedule's ticks failed; retrying on the next run", "err", err)
			return 0, false
		}
		if n >= 0 {
			return due, true
		}
	}
	return 0, false
}

// parsed returns rec's parsed spec, from the worker's cache.
func (w *worker) parsed(rec schedule.Record) (cron.Schedule, error) {
	key := rec.Zone + "\x00" + rec.Spec
	if s, ok := w.specs[key]; ok {
		return s, nil
	}
	s, err := rec.Parsed()
	if err != nil {
		return nil, err
	}
	if w.specs == nil || len(w.specs) > 1000 {
		w.specs = map[string]cron.Schedule{}
	}
	w.specs[key] = s
	return s, nil
}
