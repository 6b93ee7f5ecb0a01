package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
)

// Reads: one item by ID, pages of each state, counts and statistics. None
// of them writes.

// ReadyLen is the number of ready items: the ready list's (less the
// priority marker at its tail) and the priority set's (size.lua, which
// counts as every count of ready items does).
func (q *Partition) ReadyLen(ctx context.Context) (int64, error) {
	return q.c.eval(ctx, lua.Size, []string{q.K.Ready, q.K.Prio}).Int64()
}

// DelayedLen is the number of pending delayed items (retries not counted).
func (q *Partition) DelayedLen(ctx context.Context) (int64, error) {
	return q.c.rdb.ZCard(ctx, q.K.Delayed).Result()
}

// MaxPage bounds one page of a listing (the script unpacks its results).
const MaxPage = 1000

// ScanChunk is how many entries one round trip of a search by ID reads.
const ScanChunk = 500

// Entry is one item read from a queue: its bytes and where it is.
type Entry struct {
	Key   string // the item's ID (delayed), lease token (leased) or retry member
	Score int64  // due time in Unix µs (delayed, retry) or lease deadline in Unix ms (leased); 0 otherwise
	Data  []byte // the envelope, or bytes that are no envelope (ready, dead)
	// InGroup: a ready item held in group Group (blocking.WithGroup), Key
	// its member of the group's set.
	InGroup bool
	Group   string
}

// Get returns the pending delayed item id and its due time (Unix µs);
// found is false when no such item is pending.
func (q *Partition) Get(ctx context.Context, id string) (e Entry, found bool, err error) {
	k := q.K
	res, err := q.c.eval(ctx, lua.Get, []string{k.Delayed, k.Items}, id).StringSlice()
	if errors.Is(err, redis.Nil) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	if len(res) != 2 {
		return Entry{}, false, fmt.Errorf("unexpected get reply of %d values", len(res))
	}
	due, err := strconv.ParseFloat(res[1], 64)
	if err != nil {
		return Entry{}, false, fmt.Errorf("due time %q: %w", res[1], err)
	}
	return Entry{Key: id, Score: int64(due), Data: []byte(res[0])}, true, nil
}

// Contains reports whether the delayed item id is pending. O(1).
func (q *Partition) Contains(ctx context.Context, id string) (bool, error) {
	return q.c.rdb.HExists(ctx, q.K.Items, id).Result()
}

// ListDelayed returns up to limit pending delayed items from rank offset,
// in due order.
func (q *Partition) ListDelayed(ctx context.Context, offset, limit int) ([]Entry, error) {
	return q.listIndexed(ctx, q.K.Delayed, q.K.Items, "delayed", offset, limit)
}

// ListLeased returns up to limit leased items from rank offset, earliest
// lease deadline first.
func (q *Partition) ListLeased(ctx context.Context, offset, limit int) ([]Entry, error) {
	return q.listIndexed(ctx, q.K.Leases, q.K.Inflight, "leases", offset, limit)
}

// maxOffset is past the end of anything Redis holds; a page from there is
// empty. (Scripts do arithmetic in doubles, exact below 2^53.)
const maxOffset = 1 << 53

func (q *Partition) listIndexed(ctx context.Context, zset, hash, mode string, offset, limit int) ([]Entry, error) {
	if offset >= maxOffset || limit <= 0 {
		return nil, nil
	}
	res, err := q.c.eval(ctx, lua.List, []string{zset, hash}, offset, min(limit, MaxPage), mode).StringSlice()
	if err != nil {
		return nil, err
	}
	if len(res)%3 != 0 {
		return nil, fmt.Errorf("unexpected list reply of %d values", len(res))
	}
	out := make([]Entry, 0, len(res)/3)
	for i := 0; i < len(res); i += 3 {
		score, err := strconv.ParseFloat(res[i+1], 64)
		if err != nil {
			return nil, fmt.Errorf("score %q: %w", res[i+1], err)
		}
		out = append(out, Entry{Key: res[i], Score: int64(score), Data: []byte(res[i+2])})
	}
	return out, nil
}

// ListRetry returns up to limit retries from rank offset, earliest due
// first; Key is the retry-set member (what Reschedule and DeleteRetry
// take).
func (q *Partition) ListRetry(ctx context.Context, offset, limit int) ([]Entry, error) {
	if offset >= maxOffset || limit <= 0 {
		return nil, nil
	}
	zs, err := q.c.rdb.ZRangeWithScores(ctx, q.K.Retry, int64(offset), int64(offset+min(limit, MaxPage)-1)).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(zs))
	for i, z := range zs {
		m, _ := z.Member.(string)
		out[i] = Entry{Key: m, Score: int64(z.Score), Data: RetryEnvelope(m)}
	}
	return out, nil
}

// RetryEnvelope returns the envelope of a retry-set member (retry_envelope
// in prelude.lua): a length byte, the nonce, then the envelope.
func RetryEnvelope(member string) []byte {
	if member == "" || len(member) < 1+int(member[0]) {
		return nil
	}
	return []byte(member[1+int(member[0]):])
}

// ListReady returns up to limit ready items from position offset, in take
// order (the next one first): the priority set's, then the ready list's;
// then those held in groups, group by group, largest first (the round
// serves them interleaved). An entry of the priority set has its member as
// Key; one of a group too, with InGroup.
func (q *Partition) ListReady(ctx context.Context, offset, limit int) ([]Entry, error) {
	page, err := q.listReady(ctx, offset, limit)
	if err != nil {
		return nil, err
	}
	out := page[:0]
	for _, e := range page {
		if !IsMarker(e.Data) {
			out = append(out, e)
		}
	}
	return out, nil
}

// listReady is ListReady with the markers of the ready list left in, but
// for the one at its tail, which takes no position (a marker elsewhere,
// left by a give-back, does; Find pages by positions).
func (q *Partition) listReady(ctx context.Context, offset, limit int) ([]Entry, error) {
	limit = min(limit, MaxPage)
	if offset >= maxOffset || limit <= 0 {
		return nil, nil
	}
	var card *redis.IntCmd
	var zs *redis.StringSliceCmd
	var tail *redis.StringCmd
	var grouped *redis.BoolCmd
	_, err := q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		card = p.ZCard(ctx, q.K.Prio)
		zs = p.ZRange(ctx, q.K.Prio, int64(offset), int64(offset+limit-1))
		tail = p.LIndex(ctx, q.K.Ready, -1)
		grouped = p.HExists(ctx, q.K.Meta, keys.MetaGroups)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	if err := errors.Join(card.Err(), zs.Err(), grouped.Err()); err != nil {
		return nil, err
	}
	if grouped.Val() {
		return q.listReadyGrouped(ctx, offset, limit, card.Val(), zs.Val())
	}
	skip := 0
	if tail.Err() == nil && tail.Val() == marker {
		skip = 1
	}
	out := make([]Entry, 0, len(zs.Val()))
	for _, m := range zs.Val() {
		if len(m) > lua.SeqLen {
			out = append(out, Entry{Key: m, Data: []byte(m[lua.SeqLen:])})
		}
	}
	if len(zs.Val()) == limit {
		return out, nil
	}
	rest, err := q.listList(ctx, q.K.Ready, max(0, offset-int(card.Val()))+skip, limit-len(zs.Val()))
	if err != nil {
		return nil, err
	}
	return append(out, rest...), nil
}

// listReadyGrouped is listReady for a queue that has had grouped items,
// whose ready list holds the groups' turns: positions count items only
// (the list is read in chunks past its turns and markers), and the items
// held in groups come after the list's. card and prio are the priority
// set's size and page.
func (q *Partition) listReadyGrouped(ctx context.Context, offset, limit int, card int64, prio []string) ([]Entry, error) {
	out := make([]Entry, 0, limit)
	for _, m := range prio {
		if len(m) > lua.SeqLen {
			out = append(out, Entry{Key: m, Data: []byte(m[lua.SeqLen:])})
		}
	}
	if len(out) == limit {
		return out, nil
	}
	skip := max(0, offset-int(card)) // items of the list to pass
	listed := 0                      // items in the list
	for pos := 0; ; pos += ScanChunk {
		vals, err := q.c.rdb.LRange(ctx, q.K.Ready, int64(-pos-ScanChunk), int64(-pos-1)).Result()
		if err != nil {
			return nil, err
		}
		for i := len(vals) - 1; i >= 0; i-- { // oldest first
			if IsMarker([]byte(vals[i])) {
				continue
			}
			listed++
			if skip > 0 {
				skip--
			} else if len(out) < limit {
				out = append(out, Entry{Data: []byte(vals[i])})
			}
		}
		if len(vals) < ScanChunk {
			break
		}
	}
	if len(out) == limit {
		return out, nil
	}
	held, err := q.listGroups(ctx, max(0, offset-int(card)-listed), limit-len(out))
	if err != nil {
		return nil, err
	}
	return append(out, held...), nil
}

// ListClaimed returns up to limit items of the claimed list (being handed
// to a consumer) from position offset.
func (q *Partition) ListClaimed(ctx context.Context, offset, limit int) ([]Entry, error) {
	return q.listList(ctx, q.K.Claimed, offset, limit)
}

// listList reads a list whose oldest entry is at the right end, oldest
// first.
func (q *Partition) listList(ctx context.Context, key string, offset, limit int) ([]Entry, error) {
	limit = min(limit, MaxPage)
	if offset >= maxOffset || limit <= 0 {
		return nil, nil
	}
	vals, err := q.c.rdb.LRange(ctx, key, int64(-offset-limit), int64(-offset-1)).Result()
	if err != nil {
		return nil, err
	}
	out := make([]Entry, len(vals))
	for i, v := range vals {
		out[len(vals)-1-i] = Entry{Data: []byte(v)}
	}
	return out, nil
}

// Stats are a queue's counts and timings, read in one call.
type Stats struct {
	Delayed, Retry, Ready, Inflight, Dead int64
	Paused                                bool
	OldestReadyDueMs                      int64 // -1 when none
	NextDueUs                             int64 // -1 when none
	NowUs                                 int64
	Processed, Failed                     int64 // totals settled (count_settled)
	DeadDropped                           int64 // dead letters dropped by the queue's bounds
}

// Latency is how long the oldest ready item has waited since it fell due,
// on the server's clock: zero when none is ready.
func (s Stats) Latency() time.Duration {
	if s.OldestReadyDueMs < 0 {
		return 0
	}
	return max(0, time.Duration(s.NowUs-s.OldestReadyDueMs*1000)*time.Microsecond)
}

// Stats reads the queue's counts, pause flag and timings (stats.lua).
func (q *Partition) Stats(ctx context.Context) (Stats, error) {
	res, err := q.c.eval(ctx, lua.Stats, q.statsKeys()).Int64Slice()
	if err != nil {
		return Stats{}, err
	}
	return statsOf(res)
}

// statsKeys are the KEYS of stats.lua.
func (q *Partition) statsKeys() []string {
	k := q.K
	return []string{k.Delayed, k.Retry, k.Ready, k.Inflight, k.Claimed, k.DeadReady, k.Meta, k.Prio, k.DeadPrio}
}

// statsOf reads the reply of stats.lua.
func statsOf(res []int64) (Stats, error) {
	if len(res) != 12 {
		return Stats{}, fmt.Errorf("unexpected stats reply %v", res)
	}
	return Stats{
		Delayed: res[0], Retry: res[1], Ready: res[2], Inflight: res[3], Dead: res[4],
		Paused: res[5] == 1, OldestReadyDueMs: res[6], NextDueUs: res[7], NowUs: res[8],
		Processed: res[9], Failed: res[10], DeadDropped: res[11],
	}, nil
}

// Meta reads the queue's shared settings: max_attempts, paused, codec.
func (q *Partition) Meta(ctx context.Context) (map[string]string, error) {
	return q.c.rdb.HGetAll(ctx, q.K.Meta).Result()
}

// Find looks for the item with this ID among the first limit entries of
// one part (PartRetry, PartReady, PartInflight or PartDead), reading
// ScanChunk entries per round trip. Entries move while it reads, so an
// item that moves meanwhile may be missed (found is false): callers act on
// the entry it returns with a script that checks it is still there.
func (q *Partition) Find(ctx context.Context, p Part, id string, limit int) (e Entry, found bool, err error) {
	for off := 0; off < limit; off += ScanChunk {
		n := min(ScanChunk, limit-off)
		var page []Entry
		switch p {
		case PartRetry:
			page, err = q.ListRetry(ctx, off, n)
		case PartReady:
			page, err = q.listReady(ctx, off, n)
		case PartDead:
			page, err = q.c.Partition(q.K.Dead()).listReady(ctx, off, n)
		case PartInflight:
			page, err = q.ListLeased(ctx, off, n)
		default:
			return Entry{}, false, fmt.Errorf("find in part %d: not searchable", p)
		}
		if err != nil {
			return Entry{}, false, err
		}
		for _, e := range page {
			if got, err := envelope.PeekID(e.Data); err == nil && got == id {
				return e, true, nil
			}
		}
		if len(page) < n {
			break
		}
	}
	return Entry{}, false, nil
}

// Presence is what Probe reads of a queue.
type Presence struct {
	Registered bool   // in the registry of queues (keys.Set.Registry)
	Stored     bool   // at least one of its keys exists
	Codec      string // its codec's name from its meta hash; "" when none is recorded
	Partitions int    // its number of partitions from its meta hash; 1 when none is recorded
}

// Probe reads whether the queue is in the registry of queues, whether any
// of its keys exist (one EXISTS: they share a hash tag) and the codec its
// meta hash records. One round trip per node: the registry is on another
// Cluster slot.
func (q *Partition) Probe(ctx context.Context) (Presence, error) {
	k := q.K
	var reg *redis.FloatCmd
	var n *redis.IntCmd
	var codec, parts *redis.StringCmd
	_, err := q.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		reg = p.ZScore(ctx, k.Registry, k.Name)
		n = p.Exists(ctx, k.Delayed, k.Items, k.Seq, k.Retry, k.Ready, k.Prio, k.Leases, k.Inflight,
			k.Claimed, k.Meta, k.DeadReady, k.Schedules)
		codec = p.HGet(ctx, k.Meta, keys.MetaCodec)
		parts = p.HGet(ctx, k.Meta, keys.MetaPartitions)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Presence{}, err
	}
	for _, c := range []redis.Cmder{reg, n, codec, parts} {
		if err := c.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return Presence{}, err
		}
	}
	pr := Presence{Registered: reg.Err() == nil, Stored: n.Val() > 0, Codec: codec.Val(), Partitions: 1}
	if parts.Err() == nil {
		v, err := strconv.Atoi(parts.Val())
		if err != nil || v < 1 || v > keys.MaxPartitions {
			return Presence{}, fmt.Errorf("field %s of %s: %q is no number of partitions", keys.MetaPartitions, k.Meta, parts.Val())
		}
		pr.Partitions = v
	}
	return pr, nil
}

// History reads the queue's counts per minute (count_settled in
// prelude.lua): Unix minute -> items processed and failed in it. At most
// a day of minutes is kept: one HGETALL of up to 2,880 fields.
func (q *Partition) History(ctx context.Context) (map[int64][2]int64, error) {
	fields, err := q.c.rdb.HGetAll(ctx, q.K.History).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[int64][2]int64, len(fields)/2)
	for f, v := range fields {
		if len(f) < 2 {
			continue
		}
		minute, err1 := strconv.ParseInt(f[:len(f)-1], 10, 64)
		n, err2 := strconv.ParseInt(v, 10, 64)
		if err1 != nil || err2 != nil {
			continue // a foreign field: not ours to read
		}
		c := out[minute]
		switch f[len(f)-1] {
		case 'p':
			c[0] += n
		case 'f':
			c[1] += n
		default:
			continue
		}
		out[minute] = c
	}
	return out, nil
}

// StatsMany reads the stats of many queues (partitions) at once: one
// pipeline of stats.lua calls, which a Cluster client splits by node, so
// one round trip per node however many queues; with partitions, the
// number each recorded in its meta hash (1 when none). A NOSCRIPT reply
// loads the script and sends the pipeline once more.
func (c *Client) StatsMany(ctx context.Context, sets []keys.Set) (stats []Stats, partitions []int, errs []error) {
	for attempt := 0; ; attempt++ {
		sts := make([]*redis.Cmd, len(sets))
		parts := make([]*redis.StringCmd, len(sets))
		_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range sets {
				q := Partition{c: c, K: k}
				sts[i] = lua.Stats.EvalSha(ctx, p, q.statsKeys())
				parts[i] = p.HGet(ctx, k.Meta, keys.MetaPartitions)
			}
			return nil
		})
		stats, partitions, errs = make([]Stats, len(sets)), make([]int, len(sets)), make([]error, len(sets))
		noscript := false
		for i := range sets {
			res, err := sts[i].Int64Slice()
			if err == nil {
				stats[i], err = statsOf(res)
			}
			noscript = noscript || redis.HasErrorPrefix(err, "NOSCRIPT")
			errs[i] = err
			partitions[i] = 1
			if got, err := parts[i].Result(); err == nil {
				q := Partition{c: c, K: sets[i]}
				n, perr := q.partitionsOf(got)
				if perr != nil && errs[i] == nil {
					errs[i] = perr
				}
				partitions[i] = max(n, 1)
			} else if !errors.Is(err, redis.Nil) && errs[i] == nil {
				errs[i] = err
			}
		}
		if !noscript || attempt > 0 {
			return stats, partitions, errs
		}
		if err := lua.Stats.Load(ctx, c.rdb).Err(); err != nil {
			return stats, partitions, errs
		}
	}
}
