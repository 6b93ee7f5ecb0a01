package blocking_test

// Cost of priorities (WithPriority) on the consume and offer paths, each
// against the default path (every item priority 0) in the same run:
//
//	go test -run '^$' -bench Priority -benchtime 20000x ./blocking/
//
// The consume sub-benchmarks are named after how many priority levels the
// queue's items use: "levels=0" every item priority 0 (the ready list
// only: the default path), "levels=1" every item priority 5 (the priority
// set only), "levels=10" priorities 0..9 drawn uniformly with a fixed seed
// (both, and the marker between them). Each drains a queue filled with
// b.N+1 items by concurrent Offers (which the queue combines into
// multi-item script calls) before the timer starts.
//
// Besides ns/op they report items/s; redis-cpu-µs/op, the server
// process's CPU time (user and system: command execution and its network
// I/O) per op, from INFO cpu; and redis-cmds/op, the commands the server
// ran per op, from INFO commandstats, which counts those a script runs as
// well as the script call (one Take of the default path is one RPOP; one
// script call that runs six commands counts seven). Both are read before
// and after the timed loop, so they include the queue's own background
// calls, a few per second, and are noisy at small b.N.

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

const (
	// prioFillWorkers is how many goroutines offer at once when a queue is
	// filled before a timed section: enough for the queue to combine their
	// offers into script calls of many items.
	prioFillWorkers = 128
	// prioAmount is seedtest.BenchValue.Amount of an item of priority 0; an item of
	// priority p carries prioAmount+p, so that the drain loops can check
	// the take order. Values of every priority encode to the same size.
	prioAmount = 4200
)

// prioLevel is one consume sub-benchmark: how many priority levels its
// items use.
type prioLevel struct {
	name   string
	levels int
}

// prioLevelCases are the sub-benchmarks of BenchmarkPriorityTake and
// BenchmarkPriorityReceive.
var prioLevelCases = []prioLevel{
	{"levels=0", 0},
	{"levels=1", 1},
	{"levels=10", 10},
}

// prioPriorities returns the priorities of n items using the given number
// of levels: 0 all 0, 1 all 5, 10 uniform over 0..MaxPriority from a fixed
// seed, so every run offers the same items.
func prioPriorities(levels, n int) []int {
	ps := make([]int, n)
	switch levels {
	case 0:
	case 1:
		for i := range ps {
			ps[i] = 5
		}
	default:
		r := rand.New(rand.NewPCG(1, 2))
		for i := range ps {
			ps[i] = r.IntN(min(levels, blocking.MaxPriority+1))
		}
	}
	return ps
}

// prioValue is the value offered as item i of priority p.
func prioValue(i, p int) seedtest.BenchValue {
	v := seedtest.NewBenchValue(i)
	v.Amount = prioAmount + int64(p)
	return v
}

// prioOf returns the priority a value was offered with (see prioValue).
func prioOf(v seedtest.BenchValue) int { return int(v.Amount - prioAmount) }

// prioOfferOpts returns the options of an offer of priority p: none for 0,
// so that those offers take the default path.
func prioOfferOpts(p int) []blocking.OfferOption {
	if p == 0 {
		return nil
	}
	return []blocking.OfferOption{blocking.WithPriority(p)}
}

// prioQueue is benchQueue whose cleanup also deletes the priority set.
func prioQueue(b *testing.B) (*redis.Client, *blocking.Queue[seedtest.BenchValue]) {
	b.Helper()
	rdb, q := benchQueue(b)
	b.Cleanup(func() {
		_ = rdb.Unlink(context.Background(), redistest.KeysOf(q.Name()).Prio).Err()
	})
	return rdb, q
}

// prioFill offers one item per entry of ps, of that priority, from
// prioFillWorkers goroutines at once, and checks that the queue then holds
// them all.
func prioFill(b *testing.B, q *blocking.Queue[seedtest.BenchValue], ps []int) {
	b.Helper()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, prioFillWorkers)
	for range min(prioFillWorkers, len(ps)) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ps) {
					return
				}
				if _, err := q.Offer(ctx, prioValue(i, ps[i]), prioOfferOpts(ps[i])...); err != nil {
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
	if n, err := q.Size(ctx); err != nil || n != int64(len(ps)) {
		b.Fatalf("filled queue holds %d items (%v), want %d", n, err, len(ps))
	}
}

// prioServer is what the server did so far: its CPU time (user and
// system, the whole process) and the commands it ran, those that scripts
// ran included.
type prioServer struct {
	cpu  float64 // seconds
	cmds int64
}

// readPrioServer reads INFO cpu and INFO commandstats of the server rdb
// talks to. The commands' own "usec" is not summed: a script's time
// includes that of the commands it runs, which are counted too.
func readPrioServer(b *testing.B, rdb *redis.Client) prioServer {
	b.Helper()
	ctx := context.Background()
	var st prioServer
	cpu, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(cpu, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("INFO cpu: %s: %v", line, err)
			}
			st.cpu += f
		}
	}
	stats, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(stats, "\n") {
		line = strings.TrimSpace(line)
		_, rest, ok := strings.Cut(line, ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				st.cmds += n
			}
		}
	}
	return st
}

// prioReport reports items/s over the timed section, and the server's
// CPU µs and commands per op between two readings taken with the timer
// stopped.
func prioReport(b *testing.B, before, after prioServer) {
	b.Helper()
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, "items/s")
	}
	b.ReportMetric((after.cpu-before.cpu)*1e6/float64(b.N), "redis-cpu-µs/op")
	b.ReportMetric(float64(after.cmds-before.cmds)/float64(b.N), "redis-cmds/op")
}

// prioOrder checks that a drain loop takes items highest priority first.
type prioOrder struct{ last int }

// next records the priority of the next item taken and fails b if it is
// above the previous one.
func (o *prioOrder) next(b *testing.B, p int) {
	b.Helper()
	if p > o.last {
		b.Fatalf("took an item of priority %d after one of priority %d", p, o.last)
	}
	o.last = p
}

// BenchmarkPriorityTake: one op is one Take of a ready item from a queue
// filled with b.N+1 items of the sub-benchmark's priorities (see the file
// comment); the first Take, which starts the queue's background and, with
// priorities, switches its pops to the script, is left out of the timed
// section. The loop checks that the items come highest priority first.
func BenchmarkPriorityTake(b *testing.B) {
	ctx := context.Background()
	for _, c := range prioLevelCases {
		b.Run(c.name, func(b *testing.B) {
			rdb, q := prioQueue(b)
			prioFill(b, q, prioPriorities(c.levels, b.N+1))
			v, err := q.Take(ctx)
			if err != nil {
				b.Fatal(err)
			}
			order := prioOrder{last: prioOf(v)}
			before := readPrioServer(b, rdb)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				v, err := q.Take(ctx)
				if err != nil {
					b.Fatal(err)
				}
				order.next(b, prioOf(v))
			}
			b.StopTimer()
			prioReport(b, before, readPrioServer(b, rdb))
			benchCheckEmpty(b, q)
		})
	}
}

// BenchmarkPriorityReceive: one op is one Receive plus one Ack of a ready
// item (as BenchmarkReceiveAck) from a queue filled with b.N+1 items of
// the sub-benchmark's priorities; the first Receive and Ack are left out
// of the timed section. The loop checks that the items come highest
// priority first and that Delivery.Priority is the offered one.
func BenchmarkPriorityReceive(b *testing.B) {
	ctx := context.Background()
	for _, c := range prioLevelCases {
		b.Run(c.name, func(b *testing.B) {
			rdb, q := prioQueue(b)
			prioFill(b, q, prioPriorities(c.levels, b.N+1))
			d, err := q.Receive(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.Ack(ctx); err != nil {
				b.Fatal(err)
			}
			order := prioOrder{last: prioOf(d.Value)}
			before := readPrioServer(b, rdb)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				d, err := q.Receive(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Ack(ctx); err != nil {
					b.Fatal(err)
				}
				if p := prioOf(d.Value); d.Priority != p {
					b.Fatalf("Delivery.Priority = %d, offered with %d", d.Priority, p)
				}
				order.next(b, d.Priority)
			}
			b.StopTimer()
			prioReport(b, before, readPrioServer(b, rdb))
			benchCheckEmpty(b, q)
		})
	}
}

// BenchmarkPriorityOffer: one op is one Offer of a small struct, one
// caller at a time (as BenchmarkOffer "serial"): "priority=0" without
// WithPriority (the item goes to the ready list), "priority=5" with
// WithPriority(5) (the priority set, and the marker). One Offer before the
// timed section loads the script.
func BenchmarkPriorityOffer(b *testing.B) {
	ctx := context.Background()
	for _, p := range []int{0, 5} {
		b.Run("priority="+strconv.Itoa(p), func(b *testing.B) {
			rdb, q := prioQueue(b)
			v, opts := prioValue(1, p), prioOfferOpts(p)
			if _, err := q.Offer(ctx, v, opts...); err != nil {
				b.Fatal(err)
			}
			before := readPrioServer(b, rdb)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := q.Offer(ctx, v, opts...); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			prioReport(b, before, readPrioServer(b, rdb))
			if n, err := q.Size(ctx); err != nil || n != int64(b.N)+1 {
				b.Fatalf("Size after the timed Offers = %d, %v; want %d", n, err, b.N+1)
			}
		})
	}
}
