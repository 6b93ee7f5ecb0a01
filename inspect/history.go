package inspect

import (
	"context"
	"time"
)

// Sample is one minute of a queue's history.
type Sample struct {
	At        time.Time // the start of the minute (UTC, Redis server clock)
	Processed int64     // items settled successfully in it: acked, or delivered by Take
	Failed    int64     // failed attempts in it: Nack, a handler's error, an expired lease
}

// HistoryWindow is how far back History reaches: the counts per minute
// are kept in Redis for the last 24 hours.
const HistoryWindow = 24 * time.Hour

// History returns the queue's processed and failed counts per minute,
// oldest first, one Sample per minute from the minute of since to the
// current one (by the Redis server's clock), minutes without a count
// included as zeros. A since older than HistoryWindow, or the zero time,
// starts HistoryWindow ago: at most 1,440 samples. The counts are those
// of Stats.Processed and Stats.Failed, kept per minute by the scripts
// that settle, in bounded memory (at most a day of minutes per queue; the
// counts expire once the queue is idle for longer). Three round trips
// (the check that the queue exists, the clock, one HGETALL per
// partition).
func (in *Inspector) History(ctx context.Context, queue string, since time.Time) ([]Sample, error) {
	q, _, err := in.open(ctx, queue)
	if err != nil {
		return nil, wrap("history", queue, err)
	}
	got, err := q.History(ctx, since)
	if err != nil {
		return nil, wrap("history", queue, err)
	}
	out := make([]Sample, len(got))
	for i, s := range got {
		out[i] = Sample(s)
	}
	return out, nil
}
