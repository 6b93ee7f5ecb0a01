package dashboard

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/redelay/redelay/inspect"
)

// statsWorkers bounds how many queues' stats are read at once.
const statsWorkers = 8

// queueStats are one queue's stats, or why they could not be read.
type queueStats struct {
	Name  string
	Stats inspect.Stats
	Err   error
}

// allStats reads the stats of every queue in the registry in a bounded
// number of round trips (inspect.AllStats pipelines them), in the
// registry's order; a queue whose stats could not be read carries why.
func (h *handler) allStats(ctx context.Context) ([]queueStats, error) {
	all, err := h.in.AllStats(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]queueStats, len(all))
	for i, qs := range all {
		out[i] = queueStats{Name: qs.Queue, Stats: qs.Stats, Err: qs.Err}
	}
	return out, nil
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
