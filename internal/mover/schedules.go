package mover

import (
	"context"
	"log/slog"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/redelay/redelay/internal/schedule"
	"github.com/redelay/redelay/internal/store"
)

// dueBatch bounds how many schedules one run materializes.
const dueBatch = 50

// parkFor is how long a schedule that cannot be planned is set aside
// before a process reads it again (schedule_park.lua): a record another
// version of redelay wrote, or whose zone this process cannot load, may
// be planned by another process. Schedule and Unschedule of it take
// effect at once.
const parkFor = time.Minute

// maxUnreadable bounds the worker's memo of the unreadable records it
// logged.
const maxUnreadable = 1000

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
	moved := 0
	for _, name := range names {
		due, ok := w.advance(ctx, name, now)
		if !ok {
			continue
		}
		moved++
		if due >= 0 && (earliest < 0 || due < earliest) {
			earliest = due
		}
	}
	// More may be due: run again at once, as long as this run moved
	// some out of the way (a batch that failed waits for the sweep).
	if len(names) == dueBatch && moved > 0 {
		earliest = now.UnixMilli() + 1
	}
	return earliest
}

// advance materializes one schedule's ticks: read its record, plan, and
// compare-and-set (again, a few times, when another process advanced it
// meanwhile). A schedule that cannot be planned is set aside; ok says
// whether the schedule is no longer due, and due when it is due again (-1:
// never, its entry is gone).
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
		if err != nil {
			log.Warn("redelay: reading a schedule failed; retrying on the next run", "err", err)
			return 0, false
		}
		if !r.found {
			n, err := w.park(ctx, name, "", now)
			if err != nil {
				return 0, false
			}
			if n < 0 { // scheduled meanwhile
				continue
			}
			log.Warn("redelay: removed the due entry of a schedule that has no record")
			return -1, true
		}
		ticks, next, due, err := w.plan(r.rec, now)
		if err != nil {
			n, perr := w.park(ctx, name, r.rec, now)
			if perr != nil {
				return 0, false
			}
			if n < 0 { // replaced meanwhile
				continue
			}
			w.unreadable(log, name, r.rec, err)
			return now.Add(parkFor).UnixMilli(), true
		}
		delete(w.bad, name)
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

// plan reads a stored record and plans its ticks at now.
func (w *worker) plan(raw string, now time.Time) (ticks []time.Time, next schedule.Record, dueMs int64, err error) {
	rec, err := schedule.Decode(raw)
	if err != nil {
		return nil, rec, 0, err
	}
	s, err := w.parsed(rec)
	if err != nil {
		return nil, rec, 0, err
	}
	return rec.Advance(s, now)
}

// park sets schedule name aside for parkFor, or removes its due entry
// when it has no record (raw "").
func (w *worker) park(ctx context.Context, name, raw string, now time.Time) (int64, error) {
	n, err := call(ctx, w, func(ctx context.Context) (int64, error) {
		return w.t.Queue.SchedulePark(ctx, name, raw, now.Add(parkFor).UnixMilli())
	})
	if err != nil {
		w.t.Logger.Warn("redelay: setting aside a schedule that cannot be planned failed; retrying on the next run",
			"queue", w.t.Queue.K.Name, "schedule", name, "err", err)
	}
	return n, err
}

// unreadable logs a schedule that cannot be planned, once per record: a
// record read again after parkFor, unchanged, is not logged again.
func (w *worker) unreadable(log *slog.Logger, name, raw string, err error) {
	if seen, ok := w.bad[name]; ok && seen == raw {
		return
	}
	if w.bad == nil || len(w.bad) >= maxUnreadable {
		w.bad = map[string]string{}
	}
	w.bad[name] = raw
	log.Error("redelay: a schedule's record cannot be planned; it does not fire until it is scheduled again", "err", err)
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
