package delayed_test

// Benchmarks of the delayed queue, next to raw go-redis baselines run
// against the same server in the same run, so that results are read as
// ratios (see docs/benchmarks.md):
//
//	go test -run '^$' -bench . -benchmem ./delayed/
//	go test -run '^$' -bench 'Lateness|SpikeDrain' -benchtime 1x ./delayed/
//
// "parallel" sub-benchmarks run benchParallelism×GOMAXPROCS goroutines.

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

const (
	// benchPipeline is how many commands a pipelined baseline sends per
	// round trip.
	benchPipeline = 100
	// benchParallelism multiplies GOMAXPROCS for b.RunParallel.
	benchParallelism = 8
	// benchFar is a delay long enough that nothing falls due during a
	// benchmark.
	benchFar = time.Hour
	// benchBatch is how many values one OfferBatch of BenchmarkOfferBatch
	// carries.
	benchBatch = 1000
	// benchTransferMin is the fewest items one round of BenchmarkTransfer
	// moves, however small b.N.
	benchTransferMin = 10_000
	// benchSpikeItems is how many items BenchmarkSpikeDrain makes due at
	// once; benchSpikeConsumers goroutines take them.
	benchSpikeItems     = 100_000
	benchSpikeConsumers = 8
	// BenchmarkLateness offers latenessItems items with delays spread
	// uniformly over latenessWindow, and takes them with latenessConsumers
	// goroutines.
	latenessWindow    = 10 * time.Second
	latenessItems     = 2000
	latenessConsumers = 4
)

// benchOpen opens a blocking queue with a fresh name on rdb and a delayed
// queue feeding it; both are closed, and the queue's keys deleted, when tb
// ends (for a benchmark: when the round ends).
func benchOpen(tb testing.TB, rdb *redis.Client, opts ...delayed.Option) (*blocking.Queue[seedtest.BenchValue], *delayed.Queue[seedtest.BenchValue]) {
	tb.Helper()
	q := blocking.New[seedtest.BenchValue](rdb, redistest.QueueName(tb))
	dq := delayed.New(q, opts...)
	tb.Cleanup(func() {
		_ = dq.Close()
		_ = q.Close()
		benchUnlink(rdb, redistest.KeysOf(q.Name()))
	})
	return q, dq
}

// benchUnlink deletes a queue's keys, so the shared server does not
// accumulate what the benchmarks leave behind.
func benchUnlink(rdb redis.UniversalClient, k keys.Set) {
	_ = rdb.Unlink(context.Background(), k.Ready, k.Delayed, k.Items, k.Seq).Err()
}

// benchEnvelopeSize is the size of the envelope Offer sends (and keeps in
// the items hash) for a seedtest.BenchValue: the raw baselines use members of this
// size.
func benchEnvelopeSize(b *testing.B, rdb *redis.Client) int {
	b.Helper()
	ctx := context.Background()
	q := blocking.New[seedtest.BenchValue](rdb, redistest.QueueName(b))
	defer func() {
		_ = q.Close()
		benchUnlink(rdb, redistest.KeysOf(q.Name()))
	}()
	if _, err := q.Offer(ctx, seedtest.NewBenchValue(1)); err != nil {
		b.Fatal(err)
	}
	raw, err := rdb.LIndex(ctx, redistest.KeysOf(q.Name()).Ready, 0).Bytes()
	if err != nil {
		b.Fatal(err)
	}
	return len(raw)
}

// benchWaitReady polls the ready list until it holds n items.
func benchWaitReady(b *testing.B, q *blocking.Queue[seedtest.BenchValue], n int64, timeout time.Duration) {
	b.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	for {
		got, err := q.Size(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("ready list holds %d items after %v, want %d", got, timeout, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// BenchmarkOffer: one op is one Offer of a small struct, due in an hour (so
// nothing moves meanwhile).
func BenchmarkOffer(b *testing.B) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		_, dq := benchOpen(b, redistest.Standalone(b))
		v := seedtest.NewBenchValue(1)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := dq.Offer(ctx, v, benchFar); err != nil {
				b.Fatal(err)
			}
		}
	})
	// offers/call is how many concurrent offers one script call carried
	// (the combiner's sharing of the server's fixed cost per call), and
	// server-us/offer the server's script time per offer (INFO
	// commandstats; the transfer's few calls are in both).
	b.Run("parallel", func(b *testing.B) {
		rdb := redistest.Standalone(b)
		_, dq := benchOpen(b, rdb)
		b.SetParallelism(benchParallelism)
		b.ReportAllocs()
		before := redistest.ReadCommandStat(b, rdb, "evalsha")
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			v := seedtest.NewBenchValue(1)
			for pb.Next() {
				if _, err := dq.Offer(ctx, v, benchFar); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		after := redistest.ReadCommandStat(b, rdb, "evalsha")
		if calls := after.Calls - before.Calls; calls > 0 {
			b.ReportMetric(float64(b.N)/float64(calls), "offers/call")
			b.ReportMetric(float64(after.Usec-before.Usec)/float64(b.N), "server-us/offer")
		}
	})
	// paced: 8 producers that each pause a millisecond between offers (a
	// handler doing other work), the case where a sender waiting for more
	// offers waits in vain; client-cpu-us/offer is this process's CPU time
	// per offer (getrusage), the cost of that waiting.
	b.Run("paced", func(b *testing.B) {
		rdb := redistest.Standalone(b)
		_, dq := benchOpen(b, rdb)
		const producers = 8
		b.ReportAllocs()
		before := redistest.ReadCommandStat(b, rdb, "evalsha")
		cpu0 := redistest.ProcessCPU(b)
		b.ResetTimer()
		var next atomic.Int64
		var wg sync.WaitGroup
		for range producers {
			wg.Go(func() {
				v := seedtest.NewBenchValue(1)
				for next.Add(1) <= int64(b.N) {
					if _, err := dq.Offer(ctx, v, benchFar); err != nil {
						b.Error(err)
						return
					}
					time.Sleep(time.Millisecond)
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		cpu := redistest.ProcessCPU(b) - cpu0
		after := redistest.ReadCommandStat(b, rdb, "evalsha")
		if calls := after.Calls - before.Calls; calls > 0 {
			b.ReportMetric(float64(b.N)/float64(calls), "offers/call")
		}
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "client-cpu-us/offer")
	})
}

// BenchmarkOfferBatch: one op is one OfferBatch of benchBatch values due in
// an hour; ns/item is the cost per value.
func BenchmarkOfferBatch(b *testing.B) {
	ctx := context.Background()
	_, dq := benchOpen(b, redistest.Standalone(b))
	values := seedtest.BenchValues(benchBatch)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dq.OfferBatch(ctx, values, benchFar); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchBatch), "ns/item")
}

// BenchmarkRemove: one op is one Remove, by ID, of a pending item, with a
// backlog of pending items that does not shrink during the timed section
// (the b.N removed items come on top of it). Remove should cost the same
// whatever the backlog (O(log N)).
func BenchmarkRemove(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Standalone(b)
	// offer pends n items spread over due times between 30 and 90 minutes
	// from now, in OfferBatch calls of 1000, and returns their IDs.
	offer := func(b *testing.B, dq *delayed.Queue[seedtest.BenchValue], n int) []string {
		ids := make([]string, 0, n)
		for len(ids) < n {
			k := min(1000, n-len(ids))
			delay := 30*time.Minute + rand.N(time.Hour)
			got, err := dq.OfferBatch(ctx, seedtest.BenchValues(k), delay)
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, got...)
		}
		return ids
	}
	for _, backlog := range []int{1_000, 10_000, 100_000} {
		var dq *delayed.Queue[seedtest.BenchValue] // the backlog is built once, at the first round
		parent := b
		b.Run(fmt.Sprintf("pending=%dk", backlog/1000), func(b *testing.B) {
			if dq == nil {
				_, dq = benchOpen(parent, rdb)
				offer(b, dq, backlog)
			}
			ids := offer(b, dq, b.N)
			rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			b.ReportAllocs()
			b.ResetTimer()
			for _, id := range ids {
				ok, err := dq.Remove(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					b.Fatalf("Remove(%q) found nothing pending", id)
				}
			}
			b.StopTimer()
			if n, err := dq.Size(ctx); err != nil || n != int64(backlog) {
				b.Fatalf("pending after the timed Removes = %d, %v; want %d", n, err, backlog)
			}
		})
		if dq != nil {
			_ = dq.Clear(ctx) // free the backlog before the next size
		}
	}
}

// BenchmarkRawZADD is the baseline of the Offer and Remove benchmarks: ZADD
// of a new member the size of the envelope Offer sends. "unpipelined" and
// "parallel" make one round trip per op like Offer; "pipelined" sends
// benchPipeline per round trip, the ceiling for a client of this server.
func BenchmarkRawZADD(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Standalone(b)
	size := benchEnvelopeSize(b, rdb)
	b.Logf("member size %d bytes", size)
	zset := func(b *testing.B) string {
		k, err := keys.New(redistest.QueueName(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { benchUnlink(rdb, k) })
		return k.Delayed
	}
	var seq atomic.Uint64 // makes every member new
	member := func(buf []byte) string {
		binary.BigEndian.PutUint64(buf, seq.Add(1))
		return string(buf)
	}
	score := func() float64 { return float64(time.Now().Add(benchFar).UnixMilli()) }
	newBuf := func() []byte {
		buf := make([]byte, max(size, 8))
		for i := range buf {
			buf[i] = 'x'
		}
		return buf
	}
	b.Run("unpipelined", func(b *testing.B) {
		key, buf := zset(b), newBuf()
		b.ReportAllocs()
		for b.Loop() {
			if err := rdb.ZAdd(ctx, key, redis.Z{Score: score(), Member: member(buf)}).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		key := zset(b)
		b.SetParallelism(benchParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			buf := newBuf()
			for pb.Next() {
				if err := rdb.ZAdd(ctx, key, redis.Z{Score: score(), Member: member(buf)}).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("pipelined", func(b *testing.B) {
		key, buf := zset(b), newBuf()
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			k := min(benchPipeline, b.N-done)
			pipe := rdb.Pipeline()
			for range k {
				pipe.ZAdd(ctx, key, redis.Z{Score: score(), Member: member(buf)})
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			done += k
		}
	})
}

// BenchmarkTransfer measures the transfer's move rate alone. Each round pends
// max(b.N, benchTransferMin) items due at once (from a producer that does
// not transfer), waits until they are due, then times from starting a
// transfer (delayed.New) until the ready list holds them all. One op is one
// item moved: ns/op and items/s are per item.
func BenchmarkTransfer(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Standalone(b)
	q, producer := benchOpen(b, rdb, delayed.WithoutTransfer())
	n := max(b.N, benchTransferMin)
	if _, err := producer.OfferBatch(ctx, seedtest.BenchValues(n), time.Millisecond); err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // all due
	if got, err := q.Size(ctx); err != nil || got != 0 {
		b.Fatalf("ready before the transfer started: %d, %v", got, err)
	}
	b.ResetTimer()
	mover := delayed.New(q)
	defer mover.Close()
	benchWaitReady(b, q, int64(n), time.Minute)
	b.StopTimer()
	elapsed := b.Elapsed()
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/op")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "items/s")
}

// BenchmarkLateness measures how late items are delivered under a steady
// trickle: each op offers latenessItems items with delays spread uniformly
// over latenessWindow, takes them all with latenessConsumers goroutines, and
// records each item's lateness, its arrival time minus its intended due time
// (this process's clock at offer time plus the delay; the server is local,
// so the clocks agree). p50-ms, p99-ms, max-ms and min-ms cover every item
// of every op. An op lasts latenessWindow: run it with -benchtime 1x.
func BenchmarkLateness(b *testing.B) {
	ctx := context.Background()
	var late []time.Duration
	for range b.N {
		late = append(late, latenessRound(ctx, b)...)
	}
	b.StopTimer()
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(late[len(late)/2]), "p50-ms")
	b.ReportMetric(ms(late[len(late)*99/100]), "p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), "max-ms")
	b.ReportMetric(ms(late[0]), "min-ms") // negative: delivered early
}

// latenessRound is one op of BenchmarkLateness on a fresh queue.
func latenessRound(ctx context.Context, b *testing.B) []time.Duration {
	rdb := redistest.Standalone(b)
	q := blocking.New[seedtest.BenchValue](rdb, redistest.QueueName(b))
	dq := delayed.New(q)
	defer func() {
		_ = dq.Close()
		_ = q.Close()
		benchUnlink(rdb, redistest.KeysOf(q.Name()))
	}()

	due := make([]time.Time, latenessItems)
	late := make([]time.Duration, latenessItems)
	var taken atomic.Int64
	var wg sync.WaitGroup
	cctx, cancel := context.WithTimeout(ctx, latenessWindow+time.Minute)
	defer func() {
		cancel()
		wg.Wait() // also when the offers fail: the consumers stop first
	}()
	var mu sync.Mutex // orders the writes of due before their reads
	for range latenessConsumers {
		wg.Go(func() {
			for taken.Load() < latenessItems {
				v, ok, err := q.Poll(cctx, 100*time.Millisecond)
				arrived := time.Now()
				switch {
				case err != nil && errors.Is(cctx.Err(), context.Canceled):
					return
				case err != nil:
					b.Error(err)
					return
				case !ok:
					continue
				}
				mu.Lock()
				late[v.ID] = arrived.Sub(due[v.ID])
				mu.Unlock()
				taken.Add(1)
			}
		})
	}
	for i := range latenessItems {
		delay := rand.N(latenessWindow)
		mu.Lock()
		due[i] = time.Now().Add(delay)
		mu.Unlock()
		if _, err := dq.Offer(ctx, seedtest.NewBenchValue(i), delay); err != nil {
			b.Fatal(err)
		}
	}
	wg.Wait()
	if got := taken.Load(); got != latenessItems {
		b.Fatalf("took %d items, want %d", got, latenessItems)
	}
	return late
}

// BenchmarkSpikeDrain measures how fast a spike drains: each op makes
// benchSpikeItems items due at once (from a producer that does not
// transfer), then times from opening a consumer queue, on a client of its
// own as in another process, until benchSpikeConsumers goroutines have taken
// the last of them. items/s is the drain rate through Take (Poll); ns/op is
// the time of one drain. An op lasts seconds: run it with -benchtime 1x.
func BenchmarkSpikeDrain(b *testing.B) {
	ctx := context.Background()
	var total time.Duration
	for range b.N {
		b.StopTimer()
		rdb := redistest.Standalone(b)
		q, producer := benchOpen(b, rdb, delayed.WithoutTransfer())
		if _, err := producer.OfferBatch(ctx, seedtest.BenchValues(benchSpikeItems), time.Millisecond); err != nil {
			b.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // all due
		consumerRDB := redistest.NewClientLike(b, rdb)

		b.StartTimer()
		start := time.Now()
		consumer := blocking.New[seedtest.BenchValue](consumerRDB, q.Name())
		// The drain ends with the last Take, not when the consumers have
		// noticed that it was the last: the one that takes it records the
		// time and cancels the others' Polls.
		cctx, cancel := context.WithCancel(ctx)
		var taken atomic.Int64
		var end time.Time
		var wg sync.WaitGroup
		for range benchSpikeConsumers {
			wg.Go(func() {
				for {
					_, ok, err := consumer.Poll(cctx, 5*time.Second)
					switch {
					case cctx.Err() != nil:
						return
					case err != nil:
						b.Error(err)
						return
					case !ok:
						return // nothing for 5 s: the count below tells
					}
					if taken.Add(1) == benchSpikeItems {
						end = time.Now()
						cancel()
						return
					}
				}
			})
		}
		wg.Wait()
		b.StopTimer()
		cancel()
		_ = consumer.Close()
		if got := taken.Load(); got != benchSpikeItems {
			b.Fatalf("took %d items, want %d", got, benchSpikeItems)
		}
		total += end.Sub(start)
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(b.N), "ns/op")
	b.ReportMetric(float64(b.N*benchSpikeItems)/total.Seconds(), "items/s")
}

// BenchmarkPaired times each single-item call against the raw ZADD baseline
// call by call (see redistest.Paired): Offer (due in an hour) against ZADD, and
// Remove of a pending item (among benchPairedBacklog others) against ZADD.
// One op is one call of each.
func BenchmarkPaired(b *testing.B) {
	const benchPairedBacklog = 10_000
	ctx := context.Background()
	// zadd returns a ZADD of a new member the size of an envelope, to a
	// sorted set deleted with q.
	zadd := func(b *testing.B, rdb *redis.Client, q *blocking.Queue[seedtest.BenchValue]) func() error {
		zset := redistest.KeysOf(q.Name()).Child("raw").Delayed
		b.Cleanup(func() { _ = rdb.Unlink(ctx, zset).Err() })
		buf := make([]byte, benchEnvelopeSize(b, rdb))
		for i := range buf {
			buf[i] = 'x'
		}
		var seq uint64
		return func() error {
			seq++
			binary.BigEndian.PutUint64(buf, seq)
			z := redis.Z{Score: float64(time.Now().Add(benchFar).UnixMilli()), Member: string(buf)}
			return rdb.ZAdd(ctx, zset, z).Err()
		}
	}
	b.Run("Offer_vs_ZADD", func(b *testing.B) {
		rdb := redistest.Standalone(b)
		q, dq := benchOpen(b, rdb)
		raw := zadd(b, rdb, q)
		v := seedtest.NewBenchValue(1)
		b.ReportAllocs()
		b.ResetTimer()
		redistest.Paired(b,
			"offer", func() error { _, err := dq.Offer(ctx, v, benchFar); return err },
			"zadd", raw)
	})
	b.Run("Remove_vs_ZADD", func(b *testing.B) {
		rdb := redistest.Standalone(b)
		q, dq := benchOpen(b, rdb)
		raw := zadd(b, rdb, q)
		if _, err := dq.OfferBatch(ctx, seedtest.BenchValues(benchPairedBacklog), 2*benchFar); err != nil {
			b.Fatal(err)
		}
		ids, err := dq.OfferBatch(ctx, seedtest.BenchValues(b.N), benchFar)
		if err != nil {
			b.Fatal(err)
		}
		rand.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		next := 0
		b.ReportAllocs()
		b.ResetTimer()
		redistest.Paired(b,
			"remove", func() error {
				ok, err := dq.Remove(ctx, ids[next])
				next++
				if err == nil && !ok {
					err = fmt.Errorf("remove %q: nothing pending", ids[next-1])
				}
				return err
			},
			"zadd", raw)
	})
}
