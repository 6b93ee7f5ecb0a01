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
