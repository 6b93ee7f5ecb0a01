package delayed_test

// Cost of operating on pending items (Get, Contains, Update, Reschedule,
// Promote, Remove, List, and the blocking queue's Stats) against the size
// of the backlog, 10k, 100k and 1M pending items, each on a redis-server of
// its own (the 1M backlog is about 300 MB: it stays off the shared server).
// See BenchmarkOperate and docs/benchmarks.md:
//
//	go test -run '^$' -bench '^BenchmarkOperate$' -benchtime 10000x ./delayed/
//	go test -short -run '^$' -bench '^BenchmarkOperate$' ./delayed/   # 10k only

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

const (
	// operateChunk is how many items one OfferBatch call of operateFill
	// carries; each chunk gets a due time of its own.
	operateChunk = 4000
	// operateSpread: the backlog's due times are spread evenly over
	// [benchFar, benchFar+operateSpread), so nothing falls due during a run.
	// Reschedule moves items into the second half of that span: behind
	// the head, so it never publishes a new head due time.
	operateSpread = 2 * time.Hour
	// operatePage is the page size of the List benchmarks.
	operatePage = 100
	// operateBlock is how many calls go to one backlog before the next
	// backlog's turn (see BenchmarkOperate).
	operateBlock = 250
)

// operateBacklog is one queue with n pending items on a redis-server of its
// own, and what one round measured on it.
type operateBacklog struct {
	n     int
	label string
	rdb   *redis.Client
	q     *blocking.Queue[seedtest.BenchValue]
	dq    *delayed.Queue[seedtest.BenchValue]
	ids   []string // the n pending items
	// Promote and Remove take ids[next%n], next counting up; refilled
	// counts the ids replaced by new pending items.
	next, refilled int

	elapsed time.Duration
	server  redistest.CommandStat
}

// BenchmarkOperate: the cost of each operation on one pending item, and of
// List and Stats, against the size of the backlog. Each backlog (10k,
// 100k and 1M pending items, due in one to three hours; the queue does not
// transfer, so nothing moves) lives on a redis-server of its own, built
// once per run; -short keeps the 10k one only. One op is one call on each
// backlog: the calls go to the backlogs in turn, operateBlock at a time, so
// every backlog sees the same moment's machine and the ratio between them
// is not the drift of a shared machine between two benchmarks. Reported,
// per backlog: "<size>-µs", the client's time per call (round trip
// included), and "<size>-redis-µs", the server's own time per call of the
// command the operation sends (EVALSHA for the scripts, HEXISTS for
// Contains) from INFO commandstats; "ratio-redis" and "ratio" divide the
// largest backlog's figures by the smallest's: 1 when the cost does not
// grow at all, 100 if it grew linearly.
//
// Operations on one item pick it at random among the backlog, so the
// server's caches help no more at 1M than they would in use. Promote and
// Remove take items out: they take random items of the backlog (each
// round shuffles it), and after each turn of operateBlock calls, untimed,
// as many new items are pended in their place, so the backlog stays
// between N-operateBlock and N. List_head reads the first page of
// operatePage items, List_middle the page at rank N/2. Stats is the
// blocking queue's (the pending count is one of its counts); it runs first,
// on the backlogs as filled, and again last (Stats_after_writes), after the
// Reschedules, Promotes and Removes.
func BenchmarkOperate(b *testing.B) {
	ctx := context.Background()
	sizes := []int{10_000, 100_000, 1_000_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	var bls []*operateBacklog
	for _, n := range sizes {
		srv := redistest.StartServer(b)
		rdb := srv.Client(b)
		q, dq := benchOpen(b, rdb, delayed.WithoutTransfer())
		start := time.Now()
		bl := &operateBacklog{n: n, label: operateLabel(n), rdb: rdb, q: q, dq: dq, ids: operateFill(b, dq, n, true)}
		b.Logf("%d pending items offered in %v", n, time.Since(start).Round(time.Millisecond))
		bls = append(bls, bl)
	}
	pick := func(bl *operateBacklog) string { return bl.ids[rand.IntN(bl.n)] }
	run := func(name, cmd string, f func(bl *operateBacklog, i int) error) {
		b.Run(name, func(b *testing.B) { operateRun(b, bls, cmd, f, nil) })
	}

	stats := func(bl *operateBacklog, _ int) error {
		st, err := bl.q.Stats(ctx)
		if err == nil && st.Delayed < int64(bl.n)-operateBlock {
			err = fmt.Errorf("stats: %d delayed, want at least %d", st.Delayed, bl.n-operateBlock)
		}
		return err
	}
	run("Stats", "evalsha", stats)
	run("Get", "evalsha", func(bl *operateBacklog, _ int) error {
		_, err := bl.dq.Get(ctx, pick(bl))
		return err
	})
	run("Contains", "hexists", func(bl *operateBacklog, _ int) error {
		ok, err := bl.dq.Contains(ctx, pick(bl))
		if err == nil && !ok {
			err = errors.New("contains: not pending")
		}
		return err
	})
	v := seedtest.NewBenchValue(7)
	run("Update", "evalsha", func(bl *operateBacklog, _ int) error {
		return bl.dq.Update(ctx, pick(bl), v)
	})
	list := func(at func(n int) int) func(bl *operateBacklog, _ int) error {
		return func(bl *operateBacklog, _ int) error {
			page, err := bl.dq.List(ctx, at(bl.n), operatePage)
			if err == nil && len(page) != operatePage {
				err = fmt.Errorf("list: %d items, want %d", len(page), operatePage)
			}
			return err
		}
	}
	run("List_head", "evalsha", list(func(int) int { return 0 }))
	run("List_middle", "evalsha", list(func(n int) int { return n / 2 }))

	run("Reschedule", "evalsha", func(bl *operateBacklog, _ int) error {
		return bl.dq.Reschedule(ctx, pick(bl), benchFar+operateSpread/2+rand.N(operateSpread/2))
	})

	// Promote and Remove take random items of the backlog, replaced by
	// new ones after each turn (see operateRun's refill).
	consume := func(name string, op func(bl *operateBacklog, id string) error) {
		b.Run(name, func(b *testing.B) {
			for _, bl := range bls {
				rand.Shuffle(len(bl.ids), func(i, j int) { bl.ids[i], bl.ids[j] = bl.ids[j], bl.ids[i] })
				bl.next, bl.refilled = 0, 0
			}
			take := func(bl *operateBacklog, _ int) error {
				id := bl.ids[bl.next%bl.n]
				bl.next++
				return op(bl, id)
			}
			refill := func(bl *operateBacklog) {
				for i, id := range operateFill(b, bl.dq, bl.next-bl.refilled, false) {
					bl.ids[(bl.refilled+i)%bl.n] = id
				}
				bl.refilled = bl.next
			}
			operateRun(b, bls, "evalsha", take, refill)
			for _, bl := range bls {
				if got, err := bl.dq.Size(ctx); err != nil || got != int64(bl.n) {
					b.Fatalf("%s: pending after the round = %d, %v; want %d", bl.label, got, err, bl.n)
				}
				_ = bl.rdb.Unlink(ctx, redistest.KeysOf(bl.q.Name()).Ready).Err() // promoted items
			}
		})
	}
	consume("Promote", func(bl *operateBacklog, id string) error { return bl.dq.Promote(ctx, id) })
	consume("Remove", func(bl *operateBacklog, id string) error {
		ok, err := bl.dq.Remove(ctx, id)
		if err == nil && !ok {
			err = fmt.Errorf("remove %q: nothing pending", id)
		}
		return err
	})
	// Stats again, on the same backlogs after the writes above: see
	// docs/benchmarks.md for why the 1M figure moves.
	run("Stats_after_writes", "evalsha", stats)
}

// operateRun times b.N calls of f on each backlog, in turns of
// operateBlock calls, and reports each backlog's client and server time per
// call (see BenchmarkOperate). f(bl, -1) is an untimed warm-up (it loads the
// script); then i runs from 0 to b.N-1 on each backlog. refill, when not
// nil, runs untimed after the warm-up and after each turn.
func operateRun(b *testing.B, bls []*operateBacklog, cmd string, f func(bl *operateBacklog, i int) error, refill func(bl *operateBacklog)) {
	for _, bl := range bls {
		bl.elapsed, bl.server = 0, redistest.CommandStat{}
		if err := f(bl, -1); err != nil {
			b.Fatal(err)
		}
		if refill != nil {
			refill(bl)
		}
	}
	b.ResetTimer()
	for done, turn := 0, 0; done < b.N; turn++ {
		k := min(operateBlock, b.N-done)
		for j := range bls {
			bl := bls[(j+turn)%len(bls)] // who goes first rotates
			b.StopTimer()
			before := redistest.ReadCommandStat(b, bl.rdb, cmd)
			b.StartTimer()
			t0 := time.Now()
			for i := done; i < done+k; i++ {
				if err := f(bl, i); err != nil {
					b.Fatalf("%s: %v", bl.label, err)
				}
			}
			bl.elapsed += time.Since(t0)
			b.StopTimer()
			after := redistest.ReadCommandStat(b, bl.rdb, cmd)
			if refill != nil {
				refill(bl)
			}
			b.StartTimer()
			bl.server.Calls += after.Calls - before.Calls
			bl.server.Usec += after.Usec - before.Usec
		}
		done += k
	}
	b.StopTimer()
	var calls int64
	for _, bl := range bls {
		b.ReportMetric(float64(bl.elapsed.Microseconds())/float64(b.N), bl.label+"-µs")
		b.ReportMetric(bl.server.PerCall(), bl.label+"-redis-µs")
		calls += bl.server.Calls
	}
	b.ReportMetric(float64(calls)/float64(b.N*len(bls)), "calls/op")
	if first, last := bls[0], bls[len(bls)-1]; len(bls) > 1 {
		b.ReportMetric(last.server.PerCall()/first.server.PerCall(), "ratio-redis")
		b.ReportMetric(float64(last.elapsed)/float64(first.elapsed), "ratio")
	}
}

func operateLabel(n int) string {
	if n >= 1_000_000 {
		return strconv.Itoa(n/1_000_000) + "M"
	}
	return strconv.Itoa(n/1000) + "k"
}

// operateFill pends n items in OfferBatch calls of operateChunk and returns
// their IDs. With even set, the chunks' due times are spread evenly over
// [benchFar, benchFar+operateSpread), the first chunk's at benchFar;
// otherwise each chunk's is random in that span.
func operateFill(tb testing.TB, dq *delayed.Queue[seedtest.BenchValue], n int, even bool) []string {
	tb.Helper()
	ctx := context.Background()
	values := seedtest.BenchValues(min(n, operateChunk))
	chunks := (n + operateChunk - 1) / operateChunk
	ids := make([]string, 0, n)
	for c := 0; len(ids) < n; c++ {
		k := min(operateChunk, n-len(ids))
		delay := benchFar + rand.N(operateSpread)
		if even {
			delay = benchFar + operateSpread*time.Duration(c)/time.Duration(chunks)
		}
		got, err := dq.OfferBatch(ctx, values[:k], delay)
		if err != nil {
			tb.Fatal(err)
		}
		ids = append(ids, got...)
	}
	return ids
}
