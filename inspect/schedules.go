package inspect

import (
	"context"

	"github.com/redelay/redelay/delayed"
)

// ScheduleInfo describes one recurring schedule: the type of
// delayed.Queue.Schedules (Name, Spec, Next, Last).
type ScheduleInfo = delayed.ScheduleInfo

// Schedules lists the queue's recurring schedules (delayed.Queue.Schedule)
// by name, with their next and last ticks. Two round trips (the check
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
		out[i] = ScheduleInfo(info)
	}
	return out, nil
}
