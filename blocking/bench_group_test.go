package blocking_test

// Cost of groups (WithGroup) on the drain paths and in Redis memory, each
// against a queue whose items have no group, in the same run:
//
//	go test -run '^$' -bench Group -benchtime 100000x -count 3 ./blocking/
//
// One op is one item. Sub-benchmark "groups=G" fills a queue with ready
// items spread over G groups, item i in group i mod G (with fewer items
// than G, one group per item: the "groups" metric is the number used);
// G = 0 offers them without a group, to a queue that never had a grouped
// item: the default path. The fill is untimed (groupFill).
//
// The drain benchmarks drain such a queue and, chunk by chunk in turn, a
// queue of as many items without a group, and report the ratio of the two
// rates ("vs-no-groups"; above 1: the grouped queue is faster): both see
// the same moments of the machine (see groupDrain). After the drain they
// check that the queues are empty and that no group left a key behind
// (the round's bookkeeping and each group's items). BenchmarkGroupMemory
// reads Redis's memory per group, and BenchmarkGroupOfferBatch the cost
// of offering many grouped items in one call.

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// groupCounts are the sub-benchmarks: how many groups the items use (0:
// none, the baseline).
var groupCounts = []int{0, 1, 100, 10_000, 100_000}

const (
	// groupFillWorkers is how many goroutines offer at once when a queue is
	// filled with small groups.
	groupFillWorkers = 128
	// groupBatchFrom is the items per group from which the fill offers
	// each group with one OfferBatch instead of single Offers.
	groupBatchFrom = 64
	// groupExistsChunk is how many keys one EXISTS carries when the
	// benchmarks look for keys left behind.
	groupExistsChunk = 1000
)

// groupKey is the key of group g: a tenant's name.
func groupKey(g int) string { return "tenant-" + strconv.Itoa(g) }

// groupsUsed is how many groups n items spread over G groups use.
func groupsUsed(n, groups int) int { return min(n, groups) }

// groupQueue is benchQueue whose cleanup also deletes the group keys, the
// items of group 0 and the meta hash.
func groupQueue(b *testing.B) (*redis.Client, *blocking.Queue[seedtest.BenchValue]) {
	b.Helper()
	rdb, q := benchQueue(b)
	b.Cleanup(func() {
		k := redistest.KeysOf(q.Name())
		_ = rdb.Unlink(context.Background(), k.Meta, k.GTurn, k.GSize, k.GFlight, k.GTok, k.GPaused, k.GWait, k.GroupItems(groupKey(0))).Err()
	})
	return rdb, q
}

// groupFill makes n items ready in q, spread over the given number of
// groups (0: without a group), item i in group i mod groups: one
// OfferBatch per group when the groups are large, else concurrent Offers
// (which the queue combines into multi-item script calls).
func groupFill(b *testing.B, q *blocking.Queue[seedtest.BenchValue], n, groups int) {
	b.Helper()
	ctx := context.Background()
	dq := delayed.New(q, delayed.WithoutTransfer())
	defer func() { _ = dq.Close() }()
	used := groupsUsed(n, groups)
	if groups == 0 || n/used >= groupBatchFrom {
		per := max(used, 1)
		values := make([][]seedtest.BenchValue, per)
		for i := range n {
			values[i%per] = append(values[i%per], seedtest.NewBenchValue(i))
		}
		for g, vs := range values {
			var opts []delayed.OfferOption
			if groups > 0 {
				opts = append(opts, delayed.WithGroup(groupKey(g)))
			}
			if _, err := dq.OfferBatch(ctx, vs, 0, opts...); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		var next atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, groupFillWorkers)
		for range min(groupFillWorkers, n) {
			wg.Go(func() {
				for {
					i := int(next.Add(1)) - 1
					if i >= n {
						return
					}
					if _, err := q.Offer(ctx, seedtest.NewBenchValue(i), blocking.WithGroup(groupKey(i%used))); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	if got, err := q.Size(ctx); err != nil || got != int64(n) {
		b.Fatalf("filled queue holds %d items (%v), want %d", got, err, n)
	}
}

// groupKeysLeft returns the keys of queue name's groups that still exist:
// the round's bookkeeping (gturn, gsize, gflight, gtok) and the items of
// each of the groups 0 to groups-1.
func groupKeysLeft(b *testing.B, rdb *redis.Client, name string, groups int) []string {
	b.Helper()
	ctx := context.Background()
	k := redistest.KeysOf(name)
	all := []string{k.GTurn, k.GSize, k.GFlight, k.GTok}
	for g := range groups {
		all = append(all, k.GroupItems(groupKey(g)))
	}
	pipe := rdb.Pipeline()
	var cmds []*redis.IntCmd
	var chunks [][]string
	for lo := 0; lo < len(all); lo += groupExistsChunk {
		chunk := all[lo:min(lo+groupExistsChunk, len(all))]
		chunks = append(chunks, chunk)
		cmds = append(cmds, pipe.Exists(ctx, chunk...))
	}
	if _, err := pipe.Exec(ctx); err != nil {
		b.Fatal(err)
	}
	var left []string
	for i, c := range cmds {
		if c.Val() == 0 {
			continue
		}
		for _, key := range chunks[i] { // find which: rare, so one by one
			if rdb.Exists(ctx, key).Val() == 1 {
				left = append(left, key)
			}
		}
	}
	return left
}

// groupCheckDrained fails b unless the queue is empty and its groups left
// no key behind.
func groupCheckDrained(b *testing.B, rdb *redis.Client, q *blocking.Queue[seedtest.BenchValue], groups int) {
	b.Helper()
	benchCheckEmpty(b, q)
	if left := groupKeysLeft(b, rdb, q.Name(), groups); len(left) > 0 {
		b.Fatalf("%d keys left behind by empty groups, among them %q", len(left), left[:min(len(left), 5)])
	}
}

// groupChunk is how many items a drain benchmark takes from one queue
// before it turns to the other (see groupDrain).
const groupChunk = 2000

// groupDrainN makes n calls of each from benchParallelism×GOMAXPROCS
// goroutines and returns how long they took.
func groupDrainN(b *testing.B, q *blocking.Queue[seedtest.BenchValue], n int, each func(*blocking.Queue[seedtest.BenchValue]) error) time.Duration {
	b.Helper()
	var left atomic.Int64
	left.Store(int64(n))
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	t0 := time.Now()
	for range benchParallelism * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := each(q); err != nil {
					select {
					case errs <- err:
					default:
					}
					left.Store(0)
					return
				}
			}
		})
	}
	wg.Wait()
	d := time.Since(t0)
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	return d
}

// groupDrain is one drain benchmark. Sub-benchmark "groups=G" fills two
// queues with b.N+1 items each: one over G groups, the other without a
// group (for G = 0, both without: the ratio then shows the noise), starts
// each with one delivery outside the timed section (each), then drains
// both, groupChunk items of one, then groupChunk of the other (which goes
// first alternates), from benchParallelism×GOMAXPROCS goroutines. So both
// drains see the same moments of the machine, and "vs-no-groups" is the
// ratio of the two rates (above 1: the grouped queue drained faster). The
// timer runs for the grouped queue's chunks only: ns/op and items/s are
// its own; "no-groups-items/s" is the other's.
func groupDrain(b *testing.B, each func(*blocking.Queue[seedtest.BenchValue]) error) {
	for _, groups := range groupCounts {
		b.Run("groups="+strconv.Itoa(groups), func(b *testing.B) {
			rdb, q := groupQueue(b)
			_, base := groupQueue(b)
			groupFill(b, q, b.N+1, groups)
			groupFill(b, base, b.N+1, 0)
			for _, x := range []*blocking.Queue[seedtest.BenchValue]{q, base} {
				if err := each(x); err != nil {
					b.Fatal(err)
				}
			}
			groupVersus(b, rdb, groupChunk,
				func(k int) time.Duration { return groupDrainN(b, q, k, each) },
				func(k int) time.Duration { return groupDrainN(b, base, k, each) })
			b.ReportMetric(float64(groupsUsed(b.N+1, groups)), "groups")
			groupCheckDrained(b, rdb, q, groupsUsed(b.N+1, groups))
			benchCheckEmpty(b, base)
		})
	}
}

// groupVersus runs b.N items through grouped and through plain, in turns
// of up to chunk items (each returns how long its turn took; which goes
// first alternates), the benchmark's timer running for grouped's turns
// only, and reports their rates, "items/s" and "no-groups-items/s", and
// "vs-no-groups", grouped's rate over plain's (above 1: grouped is
// faster); and the server's CPU time and commands over both, per pair of
// one item of each.
func groupVersus(b *testing.B, rdb *redis.Client, chunk int, grouped, plain func(k int) time.Duration) {
	b.Helper()
	before := readPrioServer(b, rdb)
	var tq, tb time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	for i, done := 0, 0; done < b.N; i++ {
		k := min(chunk, b.N-done)
		timed := func() {
			b.StartTimer()
			tq += grouped(k)
			b.StopTimer()
		}
		if i%2 == 0 {
			timed()
			tb += plain(k)
		} else {
			tb += plain(k)
			timed()
		}
		done += k
	}
	after := readPrioServer(b, rdb)
	b.ReportMetric((after.cpu-before.cpu)*1e6/float64(b.N), "redis-cpu-µs/pair")
	b.ReportMetric(float64(after.cmds-before.cmds)/float64(b.N), "redis-cmds/pair")
	rate, baseRate := float64(b.N)/tq.Seconds(), float64(b.N)/tb.Seconds()
	b.ReportMetric(rate, "items/s")
	b.ReportMetric(baseRate, "no-groups-items/s")
	b.ReportMetric(rate/baseRate, "vs-no-groups")
}

// BenchmarkGroupTake: one op is one Take of a ready item, from
// benchParallelism×GOMAXPROCS goroutines (as BenchmarkTake "parallel"), of
// a queue filled with b.N+1 items over G groups.
func BenchmarkGroupTake(b *testing.B) {
	ctx := context.Background()
	take := func(q *blocking.Queue[seedtest.BenchValue]) error {
		_, err := q.Take(ctx)
		return err
	}
	groupDrain(b, take)
}

// BenchmarkGroupReceiveAck: one op is one Receive plus one Ack of a ready
// item, from benchParallelism×GOMAXPROCS goroutines (as
// BenchmarkReceiveAck "parallel"), of a queue filled with b.N+1 items over
// G groups.
func BenchmarkGroupReceiveAck(b *testing.B) {
	ctx := context.Background()
	recvAck := func(q *blocking.Queue[seedtest.BenchValue]) error {
		d, err := q.Receive(ctx)
		if err != nil {
			return err
		}
		return d.Ack(ctx)
	}
	groupDrain(b, recvAck)
}

// BenchmarkGroupOfferBatch: one op is one item offered ready now by
// OfferBatch in calls of the sub-benchmark's size, all in group
// "tenant-0", alternating call by call with a call of as many items
// without a group to another queue (which goes first alternates).
// "items/s" is the grouped offers' rate, "no-groups-items/s" the other's,
// "vs-no-groups" their ratio (above 1: the grouped offers are faster);
// the timer runs for the grouped calls only. Calls of 50 and 500 items
// (500 is OfferBatch's chunk: one script call) show how an offer call's
// cost grows with its number of grouped items.
func BenchmarkGroupOfferBatch(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{50, 500} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			rdb, q := groupQueue(b)
			_, base := groupQueue(b)
			dq, dbase := delayed.New(q), delayed.New(base)
			defer func() { _ = dq.Close(); _ = dbase.Close() }()
			values := seedtest.BenchValues(size)
			// One call of each loads the script before the timed section.
			if _, err := dq.OfferBatch(ctx, values[:1], 0, delayed.WithGroup(groupKey(0))); err != nil {
				b.Fatal(err)
			}
			if _, err := dbase.OfferBatch(ctx, values[:1], 0); err != nil {
				b.Fatal(err)
			}
			offer := func(dq *delayed.Queue[seedtest.BenchValue], opts ...delayed.OfferOption) func(k int) time.Duration {
				return func(k int) time.Duration {
					t0 := time.Now()
					if _, err := dq.OfferBatch(ctx, values[:k], 0, opts...); err != nil {
						b.Fatal(err)
					}
					return time.Since(t0)
				}
			}
			groupVersus(b, rdb, size, offer(dq, delayed.WithGroup(groupKey(0))), offer(dbase))
			for _, x := range []*blocking.Queue[seedtest.BenchValue]{q, base} {
				if got, err := x.Size(ctx); err != nil || got != int64(b.N)+1 {
					b.Fatalf("Size after the offers = %d, %v; want %d", got, err, b.N+1)
				}
			}
		})
	}
}

// groupUsedMemory reads used_memory of the server rdb talks to, once the
// server has no lazy frees pending (the previous sub-benchmark's UNLINKs).
func groupUsedMemory(b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			b.Fatal(err)
		}
		var used int64 = -1
		pending := false
		for line := range strings.SplitSeq(info, "\n") {
			k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
			switch k {
			case "used_memory":
				if used, err = strconv.ParseInt(v, 10, 64); err != nil {
					b.Fatalf("INFO memory: %s: %v", line, err)
				}
			case "lazyfree_pending_objects":
				pending = v != "0"
			}
		}
		if used < 0 {
			b.Fatal("INFO memory has no used_memory")
		}
		if !pending || time.Now().After(deadline) {
			return used
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkGroupMemory: one op is one item. Redis memory (INFO memory
// used_memory) of b.N ready items without a group and over G groups, each
// in a queue of its own, read before and after each fill: "B/group" is
// the grouped queue's whole growth per group (its items included),
// "extra-B/group" its growth beyond that of the same items without a group
// (what the groups themselves cost), "B/item" and "grouped-B/item" the
// growth per item. The grouped queue is then drained by Receive and Ack
// (so leases pass through the groups' flight counts and tokens), and
// "keys-left" counts the keys its empty groups left behind (the round's
// bookkeeping and every group's items): 0 when an empty group costs no
// memory. Their ns/op is not reported: it would be the fills' and the
// drain's.
func BenchmarkGroupMemory(b *testing.B) {
	for _, groups := range groupCounts[1:] {
		b.Run("groups="+strconv.Itoa(groups), func(b *testing.B) {
			rdb, plain := groupQueue(b)
			_, grouped := groupQueue(b)
			used := groupsUsed(b.N, groups)
			m0 := groupUsedMemory(b, rdb)
			groupFill(b, plain, b.N, 0)
			m1 := groupUsedMemory(b, rdb)
			groupFill(b, grouped, b.N, groups)
			m2 := groupUsedMemory(b, rdb)
			plainGrowth, groupedGrowth := float64(m1-m0), float64(m2-m1)
			enc := rdb.ObjectEncoding(context.Background(), redistest.KeysOf(grouped.Name()).GroupItems(groupKey(0))).Val()
			usage := rdb.MemoryUsage(context.Background(), redistest.KeysOf(grouped.Name()).GroupItems(groupKey(0))).Val()
			b.Logf("%d groups: the items of one group are a %s of %d bytes (MEMORY USAGE)", used, enc, usage)
			groupDrainN(b, grouped, b.N, func(q *blocking.Queue[seedtest.BenchValue]) error {
				d, err := q.Receive(context.Background())
				if err != nil {
					return err
				}
				return d.Ack(context.Background())
			})
			benchCheckEmpty(b, grouped)
			left := groupKeysLeft(b, rdb, grouped.Name(), used)
			if len(left) > 0 {
				b.Logf("%d keys left behind by empty groups, among them %q", len(left), left[:min(len(left), 5)])
			}
			b.ReportMetric(float64(used), "groups")
			b.ReportMetric(groupedGrowth/float64(used), "B/group")
			b.ReportMetric((groupedGrowth-plainGrowth)/float64(used), "extra-B/group")
			b.ReportMetric(plainGrowth/float64(b.N), "B/item")
			b.ReportMetric(groupedGrowth/float64(b.N), "grouped-B/item")
			b.ReportMetric(float64(len(left)), "keys-left")
			// Neither ns/op nor allocs/op mean anything here.
			b.ReportMetric(0, "ns/op")
		})
	}
}
