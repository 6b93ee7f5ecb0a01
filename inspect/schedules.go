package inspect

import (
	"context"

	"github.com/redelay/redelay/delayed"
)

// ScheduleInfo describes one recurring schedule: the type of
// delayed.Queue.Schedules (Name, Spec, Zone, Missed, Next, Last, Overdue).
type ScheduleInfo = delayed.ScheduleInfo

// Schedules lists the queue's recurring schedules (delayed.Queue.Schedule)
// by name, with their zone, missed-tick policy, next and last ticks, and
// whether the next one is overdue. Two round trips (the check
// that the queue exists, then one read of its schedules), O(S) for S
// schedules.
func (in *Inspector) Schedules(ctx context.Context, queue string) ([]ScheduleInfo, error) {
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return nil, wrap("schedules", queue, err)
	}
	infos, err := q.Schedules(ctx)
	if err != nil {
		return nil, wrap("schedules", queue, err)
	}
	out := make([]ScheduleInfo, len(infos))
	for i, info := range infos {
		out[i] = ScheduleInfo{
			Name: info.Name, Spec: info.Spec, Zone: info.Zone, Missed: delayed.MissedTicks(info.Missed),
			Next: info.Next, Last: info.Last, Overdue: info.Overdue,
		}
	}
	return out, nil
}

// RunSchedule runs the queue's schedule name now, once: one item with the
// value its ticks carry is offered, ready at once, under a new ID (the
// schedule's name, "@run-" and a random part), which it returns. The
// schedule and its next tick are left as they are. ErrNotFound when the
// queue or the schedule does not exist. Three round trips.
func (in *Inspector) RunSchedule(ctx context.Context, queue, name string) (string, error) {
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return "", wrap("run schedule", queue, err)
	}
	id, err := q.RunSchedule(ctx, name)
	if err != nil {
		return "", wrap("run schedule", queue, err)
	}
	return id, nil
}

// Unschedule removes the queue's schedule name and its ticks not yet
// delivered, as delayed.Queue.Unschedule does; false when there was no
// such schedule. ErrNotFound when the queue does not exist.
func (in *Inspector) Unschedule(ctx context.Context, queue, name string) (bool, error) {
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return false, wrap("unschedule", queue, err)
	}
	ok, err := q.Unschedule(ctx, name)
	if err != nil {
		return false, wrap("unschedule", queue, err)
	}
	return ok, nil
}
