package dashboard

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/inspect"
	iqueue "github.com/redelay/redelay/internal/queue"
)

// statsWorkers bounds how many queues' stats are read at once.
const statsWorkers = 8

// queueStats are one queue's stats, or why they could not be read.
type queueStats struct {
	Name  string
	Stats inspect.Stats
	Err   error
}

// collect reads the stats of the queues names, statsWorkers at a time,
// and returns them in the same order once every read has finished. Each
// read is one round trip: the names come from the registry of queues, so
// the check that each queue exists (inspect.Stats's first round trip) is
// left out.
func (h *handler) collect(ctx context.Context, names []string) []queueStats {
	out := make([]queueStats, len(names))
	each(len(names), func(i int) { out[i] = h.readStats(ctx, names[i]) })
	return out
}

// each calls f(i) for every i from 0 to n-1, statsWorkers at a time, and
// returns once every call has.
func each(n int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(statsWorkers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				f(i)
			}
		})
	}
	wg.Wait()
}

// readStats reads the stats of the queue name in one round trip (a queue
// with partitions takes a few more). The
// queue is opened untyped (raw bytes): Stats decodes nothing, and
// blocking.New makes no network call and starts nothing.
func (h *handler) readStats(ctx context.Context, name string) queueStats {
	q := blocking.New[[]byte](h.rdb, name, blocking.WithCodec(codec.Raw()), blocking.WithLogger(h.log),
		blocking.WithPrefix(h.in.Prefix()))
	st, err := q.Stats(ctx)
	if le := (*iqueue.LayoutError)(nil); errors.As(err, &le) {
		// A queue with partitions (the read told): the inspector reads
		// them all.
		st, err = h.in.Stats(ctx, name)
	}
	return queueStats{Name: name, Stats: st, Err: err}
}

// counts returns the counts of st by state, in inspect.States order.
func counts(st inspect.Stats) []stateCount {
	return []stateCount{
		{inspect.Delayed, st.Delayed},
		{inspect.Retry, st.Retry},
		{inspect.Ready, st.Ready},
		{inspect.Inflight, st.Inflight},
		{inspect.Dead, st.Dead},
	}
}

// count returns the count of state s in st.
func count(st inspect.Stats, s inspect.State) int64 {
	for _, c := range counts(st) {
		if c.State == s {
			return c.N
		}
	}
	return 0
}

// stateCount is how many items are in one state.
type stateCount struct {
	State inspect.State
	N     int64
}
