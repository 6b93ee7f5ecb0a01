package delayed_test

// Cost of the duplicate modes (WithReplace, WithDebounce, WithUniqueFor)
// per offer, against plain WithID offers measured in the same run, on a
// redis-server of its own. See BenchmarkDupModes and docs/benchmarks.md:
//
//	go test -run '^$' -bench '^BenchmarkDupModes' -benchtime 20000x -count 5 ./delayed/

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

const (
	// dupBlock is how many offers go to one mode before the next mode's
	// turn.
	dupBlock = 250
	// dupProducers is how many goroutines offer at once in
	// BenchmarkDupModesParallel.
	dupProducers = 8
)

// dupMode is one way of offering, on a queue of its own.
type dupMode struct {
	label string
	opts  func(id string) []delayed.OfferOption
	// fixedID offers the same ID every time (replacing a pending item).
	fixedID bool

	dq      *delayed.Queue[seedtest.BenchValue]
	seq     int
	elapsed time.Duration
	server  redistest.CommandStat
}

func dupModes() []*dupMode {
	return []*dupMode{
		{label: "plain", opts: func(id string) []delayed.OfferOption { return []delayed.OfferOption{delayed.WithID(id)} }},
		{label: "replace", opts: func(id string) []delayed.OfferOption {
			return []delayed.OfferOption{delayed.WithID(id), delayed.WithReplace()}
		}},
		{label: "debounce", opts: func(id string) []delayed.OfferOption {
			return []delayed.OfferOption{delayed.WithID(id), delayed.WithDebounce(time.Hour)}
		}},
		{label: "unique", opts: func(id string) []delayed.OfferOption {
			return []delayed.OfferOption{delayed.WithID(id), delayed.WithUniqueFor(time.Minute)}
		}},
		{label: "replace_existing", fixedID: true, opts: func(id string) []delayed.OfferOption {
			return []delayed.OfferOption{delayed.WithID(id), delayed.WithReplace()}
		}},
	}
}

// dupOpen opens, for each mode, a queue that does not transfer (so the
// server runs nothing but the offers) on rdb.
func dupOpen(b *testing.B, rdb *redis.Client, modes []*dupMode) {
	for _, m := range modes {
		q := blocking.New[seedtest.BenchValue](rdb, redistest.QueueName(b)+"-"+m.label)
		m.dq = delayed.New(q, delayed.WithoutTransfer())
		b.Cleanup(func() {
			_ = m.dq.Close()
			_ = q.Close()
			k := redistest.KeysOf(q.Name())
			_ = rdb.Unlink(context.Background(), k.Ready, k.Delayed, k.Items, k.Seq).Err()
		})
	}
}

// next returns the ID of m's next offer: a new one each time, or always
// the same for a fixedID mode.
func (m *dupMode) next() string {
	if m.fixedID {
		return "fixed"
	}
	m.seq++
	return m.label + "-" + strconv.Itoa(m.seq)
}

// BenchmarkDupModes: one op is one single-goroutine Offer (due in an hour)
// in each mode: plain WithID, WithID+WithReplace, WithID+WithDebounce(1h),
// WithID+WithUniqueFor(1m), each of a fresh ID (every offer is accepted
// and creates an item), and WithReplace of the same ID every time
// ("replace_existing": every offer after the first replaces a pending
// item). Each mode has a queue of its own, on one redis-server of the
// benchmark's own, and the modes take turns of dupBlock offers, so each
// sees the same moment's machine. Reported, per mode: "<mode>-µs", the
// client's time per offer, and "<mode>-redis-µs", the server's time per
// EVALSHA (INFO commandstats); "ratio-<mode>" and "ratio-redis-<mode>"
// divide them by plain WithID's.
func BenchmarkDupModes(b *testing.B) {
	for _, c := range dupContexts() {
		b.Run("ctx="+c.name, func(b *testing.B) { dupSerial(b, c.ctx) })
	}
}

// dupContext is a context the offers are made with: Background, or one
// that can be cancelled (as a request's context), which makes a call that
// is not combined run in a goroutine of its own so that the caller can
// stop waiting (see store.Await).
type dupContext struct {
	name string
	ctx  context.Context
}

func dupContexts() []dupContext {
	cancellable, cancel := context.WithCancel(context.Background())
	_ = cancel // lives as long as the benchmark binary
	return []dupContext{{"background", context.Background()}, {"cancellable", cancellable}}
}

func dupSerial(b *testing.B, ctx context.Context) {
	srv := redistest.StartServer(b)
	rdb := srv.Client(b)
	modes := dupModes()
	dupOpen(b, rdb, modes)
	v := seedtest.NewBenchValue(1)
	offer := func(m *dupMode) error {
		_, err := m.dq.Offer(ctx, v, benchFar, m.opts(m.next())...)
		return err
	}
	for _, m := range modes { // warm-up: loads the scripts
		if err := offer(m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done, turn := 0, 0; done < b.N; turn++ {
		k := min(dupBlock, b.N-done)
		for j := range modes {
			m := modes[(j+turn)%len(modes)]
			b.StopTimer()
			before := redistest.ReadCommandStat(b, rdb, "evalsha")
			b.StartTimer()
			t0 := time.Now()
			for range k {
				if err := offer(m); err != nil {
					b.Fatalf("%s: %v", m.label, err)
				}
			}
			m.elapsed += time.Since(t0)
			b.StopTimer()
			after := redistest.ReadCommandStat(b, rdb, "evalsha")
			b.StartTimer()
			m.server.Calls += after.Calls - before.Calls
			m.server.Usec += after.Usec - before.Usec
		}
		done += k
	}
	b.StopTimer()
	base := modes[0]
	for _, m := range modes {
		b.ReportMetric(float64(m.elapsed.Nanoseconds())/1000/float64(b.N), m.label+"-µs")
		b.ReportMetric(m.server.PerCall(), m.label+"-redis-µs")
		if m.server.Calls != int64(b.N) {
			b.Logf("%s: %d EVALSHA for %d offers", m.label, m.server.Calls, b.N)
		}
		if m != base {
			b.ReportMetric(float64(m.elapsed)/float64(base.elapsed), "ratio-"+m.label)
			b.ReportMetric(m.server.PerCall()/base.server.PerCall(), "ratio-redis-"+m.label)
		}
	}
}

// BenchmarkDupModesParallel: dupProducers goroutines offer at once, of
// fresh IDs (due in an hour), plain WithID against WithID+WithReplace. Plain
// offers made at the same time are combined into shared script calls;
// offers with a duplicate mode are sent one call each. One op is one offer
// in each mode; the modes take turns of dupBlock×dupProducers offers each.
// Reported, per mode: "<mode>-offers/s", "<mode>-calls/offer" (EVALSHA
// per offer) and "<mode>-redis-µs" (per EVALSHA); "ratio-replace" divides
// replace's throughput by plain's.
func BenchmarkDupModesParallel(b *testing.B) {
	for _, c := range dupContexts() {
		b.Run("ctx="+c.name, func(b *testing.B) { dupParallel(b, c.ctx) })
	}
}

func dupParallel(b *testing.B, ctx context.Context) {
	srv := redistest.StartServer(b)
	rdb := srv.Client(b)
	modes := dupModes()[:2] // plain, replace
	dupOpen(b, rdb, modes)
	v := seedtest.NewBenchValue(1)
	for _, m := range modes {
		if _, err := m.dq.Offer(ctx, v, benchFar, m.opts(m.label+"-warm")...); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for done, turn := 0, 0; done < b.N; turn++ {
		k := min(dupBlock*dupProducers, b.N-done)
		for j := range modes {
			m := modes[(j+turn)%len(modes)]
			b.StopTimer()
			before := redistest.ReadCommandStat(b, rdb, "evalsha")
			b.StartTimer()
			t0 := time.Now()
			var wg sync.WaitGroup
			for p := range dupProducers {
				n := k / dupProducers
				if p < k%dupProducers {
					n++
				}
				prefix := m.label + "-" + strconv.Itoa(turn) + "-" + strconv.Itoa(p) + "-"
				wg.Go(func() {
					for i := range n {
						if _, err := m.dq.Offer(ctx, v, benchFar, m.opts(prefix+strconv.Itoa(i))...); err != nil {
							b.Errorf("%s: %v", m.label, err)
							return
						}
					}
				})
			}
			wg.Wait()
			m.elapsed += time.Since(t0)
			b.StopTimer()
			after := redistest.ReadCommandStat(b, rdb, "evalsha")
			b.StartTimer()
			m.server.Calls += after.Calls - before.Calls
			m.server.Usec += after.Usec - before.Usec
		}
		done += k
	}
	b.StopTimer()
	for _, m := range modes {
		b.ReportMetric(float64(b.N)/m.elapsed.Seconds(), m.label+"-offers/s")
		b.ReportMetric(float64(m.server.Calls)/float64(b.N), m.label+"-calls/offer")
		b.ReportMetric(m.server.PerCall(), m.label+"-redis-µs")
	}
	b.ReportMetric(modes[0].elapsed.Seconds()/modes[1].elapsed.Seconds(), "ratio-replace")
}
