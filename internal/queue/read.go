package queue

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// Stats is a snapshot of a queue's counts (see blocking.Stats, which has
// the same fields).
type Stats struct {
	Delayed, Retry, Ready, Inflight, Dead int64
	Paused                                bool
	Latency                               time.Duration
	NextDue                               time.Time
	Eviction                              string
	Processed, Failed                     int64
	DeadDropped                           int64
}

// Stats reads every part's stats at once (one script call each) and sums
// them: the latency is the largest, the next due time the earliest.
func (q *Queue) Stats(ctx context.Context) (Stats, error) {
	all, err := perPart(ctx, q, "stats", func(p *part) (store.Stats, error) { return p.Stats(ctx) })
	if err != nil {
		return Stats{}, err
	}
	s := sumStats(all)
	s.Eviction = q.Eviction(ctx)
	return s, nil
}

// sumStats sums the stats of a queue's parts: the latency is the
// largest, the next due time the earliest.
func sumStats(all []store.Stats) Stats {
	var s Stats
	for _, st := range all {
		s.Delayed += st.Delayed
		s.Retry += st.Retry
		s.Ready += st.Ready
		s.Inflight += st.Inflight
		s.Dead += st.Dead
		s.Paused = s.Paused || st.Paused
		s.Processed += st.Processed
		s.Failed += st.Failed
		s.DeadDropped += st.DeadDropped
		s.Latency = max(s.Latency, st.Latency())
		if st.NextDueUs >= 0 {
			if due := time.UnixMicro(st.NextDueUs); s.NextDue.IsZero() || due.Before(s.NextDue) {
				s.NextDue = due
			}
		}
	}
	return s
}

// StatsOf reads the stats of the named queues under the key prefix (""
// the default) in a bounded number of round trips, however many queues:
// one pipeline of every queue's partition 0 (one round trip per node of
// a Cluster), one more for the other partitions of queues that have
// them, and the eviction policy (shared by the client). errs[i] says why
// the stats of names[i] could not be read (a name that is no queue name
// wraps ErrInvalidArgument).
func StatsOf(ctx context.Context, rdb redis.UniversalClient, prefix string, names []string) (stats []Stats, errs []error) {
	stats, errs = make([]Stats, len(names)), make([]error, len(names))
	var sets []keys.Set
	var idx []int
	for i, name := range names {
		k, err := keys.For(prefix, name)
		if err != nil {
			errs[i] = fmt.Errorf("%w: %w", err, ErrInvalidArgument)
			continue
		}
		sets, idx = append(sets, k), append(idx, i)
	}
	c := store.New(rdb)
	first, parts, ferrs := c.StatsMany(ctx, sets)
	var more []keys.Set
	var owner []int // index in sets of each of more
	for j, k := range sets {
		for p := 1; ferrs[j] == nil && p < parts[j]; p++ {
			more, owner = append(more, k.Partition(p)), append(owner, j)
		}
	}
	all := make([][]store.Stats, len(sets))
	for j := range sets {
		all[j] = []store.Stats{first[j]}
	}
	if len(more) > 0 {
		rest, _, rerrs := c.StatsMany(ctx, more)
		for m, j := range owner {
			if rerrs[m] != nil && ferrs[j] == nil {
				ferrs[j] = rerrs[m]
			}
			all[j] = append(all[j], rest[m])
		}
	}
	eviction := Eviction(ctx, rdb)
	for j, i := range idx {
		if errs[i] = ferrs[j]; errs[i] == nil {
			stats[i] = sumStats(all[j])
			stats[i].Eviction = eviction
		}
	}
	return stats, errs
}

// reading is what the gauges of a queue of several parts report.
func (q *Queue) reading(ctx context.Context) (telemetry.Reading, error) {
	s, err := q.Stats(ctx)
	if err != nil {
		return telemetry.Reading{}, err
	}
	return telemetry.Reading{
		Delayed: s.Delayed, Retry: s.Retry, Ready: s.Ready, Inflight: s.Inflight, Dead: s.Dead,
		Paused: s.Paused, Latency: s.Latency, DeadDropped: s.DeadDropped,
	}, nil
}

// Size is the number of items ready to take.
func (q *Queue) Size(ctx context.Context) (int64, error) {
	return q.count(ctx, "size", func(ctx context.Context, p *part) (int64, error) {
		return Call(ctx, p, p.Store.ReadyLen, nil)
	})
}

// DelayedSize is the number of delayed items not yet due.
func (q *Queue) DelayedSize(ctx context.Context) (int64, error) {
	return q.count(ctx, "size", func(ctx context.Context, p *part) (int64, error) {
		return Call(ctx, p, p.Store.DelayedLen, nil)
	})
}

// State is where an item is: the states of the inspector.
type State string

// The states of an item.
const (
	Delayed  State = "delayed"
	Retry    State = "retry"
	Ready    State = "ready"
	Inflight State = "inflight"
	Dead     State = "dead"
)

// Entry is one stored item as a listing reads it: its key, score and raw
// bytes (see store.Entry).
type Entry = store.Entry

// MaxPage bounds one page of a listing.
const MaxPage = store.MaxPage

// List returns up to limit entries in state st, from offset, in the order
// a consumer meets them (ready: priority, then due time; in flight: lease
// deadline; otherwise due time), merged over the parts.
func (q *Queue) List(ctx context.Context, st State, offset, limit int) ([]Entry, error) {
	if err := q.Err(); err != nil {
		return nil, err
	}
	if len(q.parts) == 1 {
		return q.parts[0].page(ctx, st, offset, limit)
	}
	all, err := perPart(ctx, q, "", func(p *part) ([]Entry, error) {
		var entries []Entry
		for off := 0; off < offset+limit; {
			n := min(MaxPage, offset+limit-off)
			page, err := p.page(ctx, st, off, n)
			if err != nil {
				return nil, err
			}
			entries = append(entries, page...)
			if len(page) < n {
				break
			}
			off += len(page)
		}
		return entries, nil
	})
	if err != nil {
		return nil, err
	}
	out := sortEntries(st, slices.Concat(all...))
	if offset >= len(out) {
		return []Entry{}, nil
	}
	return out[offset:min(offset+limit, len(out))], nil
}

// sortEntries orders entries of several parts as List promises.
func sortEntries(st State, entries []Entry) []Entry {
	type keyed struct {
		e        Entry
		prio     int
		due      time.Time
		deadline time.Time
	}
	ks := make([]keyed, len(entries))
	for i, e := range entries {
		k := keyed{e: e}
		switch st {
		case Delayed, Retry:
			k.due = time.UnixMicro(e.Score)
		default:
			if env, err := envelope.Unmarshal(e.Data); err == nil {
				k.due = env.DueAt
				if st == Ready {
					k.prio = env.Priority()
				}
			}
			if st == Inflight && e.Key != "" {
				k.deadline = time.UnixMilli(e.Score)
			}
		}
		ks[i] = k
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		if a.prio != b.prio {
			return b.prio - a.prio
		}
		if c := deadlineOrder(a.deadline, b.deadline); c != 0 {
			return c
		}
		return a.due.Compare(b.due)
	})
	out := make([]Entry, len(ks))
	for i, k := range ks {
		out[i] = k.e
	}
	return out
}

// deadlineOrder orders lease deadlines, a claimed item's (zero) last.
func deadlineOrder(a, b time.Time) int {
	switch {
	case a.IsZero() && b.IsZero():
		return 0
	case a.IsZero():
		return 1
	case b.IsZero():
		return -1
	}
	return a.Compare(b)
}

// page reads one page of c's items in state st.
func (c *part) page(ctx context.Context, st State, offset, limit int) ([]Entry, error) {
	return Call(ctx, c, func(ctx context.Context) ([]Entry, error) {
		s := c.Store
		switch st {
		case Delayed:
			return s.ListDelayed(ctx, offset, limit)
		case Retry:
			return s.ListRetry(ctx, offset, limit)
		case Ready:
			return s.ListReady(ctx, offset, limit)
		case Dead:
			return s.Client().Partition(c.Keys.Dead()).ListReady(ctx, offset, limit)
		case Inflight:
			return c.pageInflight(ctx, int64(offset), int64(limit))
		}
		return nil, fmt.Errorf("unknown state %q: %w", st, ErrInvalidArgument)
	}, nil)
}

// pageInflight reads a page of the items in flight: the leases by
// deadline, then the items claimed (being handed to a consumer).
func (c *part) pageInflight(ctx context.Context, offset, limit int64) ([]Entry, error) {
	s := c.Store
	n, err := s.LeaseCount(ctx)
	if err != nil {
		return nil, err
	}
	leased := max(0, min(n-offset, limit)) // how many of the page's positions are leases
	var out []Entry
	if leased > 0 {
		if out, err = s.ListLeased(ctx, int(offset), int(leased)); err != nil {
			return nil, err
		}
	}
	if leased == limit {
		return out, nil
	}
	claimed, err := s.ListClaimed(ctx, int(max(0, offset-n)), int(limit-leased))
	if err != nil {
		return nil, err
	}
	return append(out, claimed...), nil
}

// Item is a stored item, its envelope read, its value still encoded.
type Item struct {
	ID         string
	Attempt    int
	EnqueuedAt time.Time
	DueAt      time.Time
	Headers    map[string]string
	Priority   int
	Group      string // the group's key (WithGroup); "" for none
	Payload    []byte
}

// Item reads an entry's envelope (an error marked with ErrCorrupt when it
// cannot); scored takes the due time from the entry's score (delayed and
// retry entries).
func (q *Queue) Item(e Entry, scored bool) (Item, error) {
	env, err := q.parts[0].Decode(e.Data)
	if err != nil {
		return Item{}, err
	}
	it := Item{
		ID: env.ID, Attempt: env.Attempt, EnqueuedAt: env.EnqueuedAt, DueAt: env.DueAt,
		Headers: maps.Clone(env.Headers), Priority: env.Priority(), Payload: env.Payload,
	}
	it.Group, _ = env.Group()
	if scored {
		it.DueAt = time.UnixMicro(e.Score)
	}
	return it, nil
}

// Decode decodes an item's value into a T with the queue's codec: an
// error marked with ErrDecode when it cannot.
func Decode[T any](q *Queue, it Item) (T, error) {
	var v T
	c := q.Config().Codec
	if err := Unmarshal(c, it.Payload, &v); err != nil {
		return v, DecodeError(c, it.ID, err)
	}
	return v, nil
}

// Items reads entries as typed items (mk builds one from the item and its
// value); an entry that cannot be read is left out, and logged.
func Items[T, I any](q *Queue, entries []Entry, scored bool, mk func(Item, T) I) []I {
	out := make([]I, 0, len(entries))
	for _, e := range entries {
		it, err := q.Item(e, scored)
		var v T
		if err == nil {
			v, err = Decode[T](q, it)
		}
		if err != nil {
			id, _ := envelope.PeekID(e.Data)
			q.Config().Logger.Warn("redelay: an item that cannot be decoded was left out of a listing",
				"queue", q.Name(), "id", id, "err", err)
			continue
		}
		out = append(out, mk(it, v))
	}
	return out
}

// Get returns the pending delayed item id; found is false when there is
// none.
func (q *Queue) Get(ctx context.Context, id string) (e Entry, found bool, err error) {
	_, e, found, err = q.findIn(ctx, Delayed, id)
	return e, found, err
}

// Contains reports whether id is pending in the delayed set.
func (q *Queue) Contains(ctx context.Context, id string) (bool, error) {
	for _, c := range q.lookIn(id) {
		ok, err := Call(ctx, c, func(ctx context.Context) (bool, error) {
			return c.Store.Contains(ctx, id)
		}, nil)
		if ok || err != nil {
			return ok, err
		}
	}
	return false, nil
}

// Now is the Redis server's clock.
func (q *Queue) Now(ctx context.Context) (time.Time, error) {
	c := q.parts[0]
	return Call(ctx, c, c.Store.Client().Now, nil)
}

// Sample is one minute of a queue's history: the items processed and the
// attempts failed in the minute that starts at At.
type Sample struct {
	At                time.Time
	Processed, Failed int64
}

// HistoryWindow is how far back History reaches: what the scripts keep.
const HistoryWindow = 24 * time.Hour

// History returns one Sample per minute, oldest first, from the minute of
// since (no earlier than HistoryWindow before the server's clock) to the
// current minute, summed over the parts; minutes without a count are
// zero.
func (q *Queue) History(ctx context.Context, since time.Time) ([]Sample, error) {
	now, err := q.Now(ctx)
	if err != nil {
		return nil, err
	}
	all, err := perPart(ctx, q, "history", func(p *part) (map[int64][2]int64, error) {
		return Call(ctx, p, p.Store.History, nil)
	})
	if err != nil {
		return nil, err
	}
	last := now.UnixMilli() / 60000
	first := max(since.UnixMilli()/60000, last-int64(HistoryWindow/time.Minute)+1)
	if since.UnixMilli() < 0 {
		first = last - int64(HistoryWindow/time.Minute) + 1
	}
	if first > last {
		return []Sample{}, nil
	}
	out := make([]Sample, 0, last-first+1)
	for m := first; m <= last; m++ {
		s := Sample{At: time.UnixMilli(m * 60000).UTC()}
		for _, h := range all {
			c := h[m]
			s.Processed += c[0]
			s.Failed += c[1]
		}
		out = append(out, s)
	}
	return out, nil
}
