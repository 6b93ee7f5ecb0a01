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
	t, err := in.open(ctx, queue)
	if err != nil {
		return nil, wrap("schedules", queue, err)
	}
	// A delayed queue without transfer starts nothing and needs no Close.
	infos, err := delayed.New(in.typed(queue, t), delayed.WithoutTransfer()).Schedules(ctx)
	if err != nil {
		return nil, wrap("schedules", queue, err)
	}
	return infos, nil
}
