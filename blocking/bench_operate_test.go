package blocking_test

// Cost of operating a blocking queue, and of the pause check on the
// consume path:
//
//	go test -run '^$' -bench '^BenchmarkOperateReady$' -benchtime 10000x ./blocking/
//	go test -run '^$' -bench 'LeasePauseCheck|ReceiveServer' -benchtime 20000x -count 5 ./blocking/
//
// redis-µs/call is the server's own time per call of the command an
// operation sends (EVALSHA for the scripts), from INFO commandstats read
// before and after the timed loop: it leaves out the round trip and the
// client.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// operateBlock is how many calls go to one queue before the next queue's
// turn (see BenchmarkOperateReady).
const operateBlock = 250

// operateReady is one queue with n ready items on a redis-server of its
// own, and what one round measured on it.
type operateReady struct {
	n       int
	label   string
	rdb     *redis.Client
	q       *blocking.Queue[seedtest.BenchValue]
	elapsed time.Duration
	server  redistest.CommandStat
}

// BenchmarkOperateReady: Stats and Peek against the length of the ready
// list, 10k and 1M items (-short: 10k only), each queue on a redis-server
// of its own. One op is one call on each queue, the calls going to the
// queues in turns of operateBlock, as in the delayed package's
// BenchmarkOperate; it reports the same metrics ("<size>-µs",
// "<size>-redis-µs", "ratio-redis", "ratio"). Stats reads every count and
// the oldest ready item's due time; Peek reads the next 100 items.
func BenchmarkOperateReady(b *testing.B) {
	ctx := context.Background()
	sizes := []int{10_000, 1_000_000}
	if testing.Short() {
		sizes = sizes[:1]
	}
	var qs []*operateReady
	for _, n := range sizes {
		srv := redistest.StartServer(b)
		rdb := srv.Client(b)
		q := blocking.New[seedtest.BenchValue](rdb, redistest.QueueName(b))
		b.Cleanup(func() { _ = q.Close() })
		benchFill(b, rdb, redistest.KeysOf(q.Name()).Ready, benchStoredItem(b, rdb), n)
		qs = append(qs, &operateReady{n: n, label: operateLabel(n), rdb: rdb, q: q})
	}
	run := func(name, cmd string, f func(r *operateReady) error) {
		b.Run(name, func(b *testing.B) {
			for _, r := range qs {
				r.elapsed, r.server = 0, redistest.CommandStat{}
				if err := f(r); err != nil { // warm-up: loads the script
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for done, turn := 0, 0; done < b.N; turn++ {
				k := min(operateBlock, b.N-done)
				for j := range qs {
					r := qs[(j+turn)%len(qs)]
					b.StopTimer()
					before := redistest.ReadCommandStat(b, r.rdb, cmd)
					b.StartTimer()
					t0 := time.Now()
					for range k {
						if err := f(r); err != nil {
							b.Fatalf("%s: %v", r.label, err)
						}
					}
					r.elapsed += time.Since(t0)
					b.StopTimer()
					after := redistest.ReadCommandStat(b, r.rdb, cmd)
					b.StartTimer()
					r.server.Calls += after.Calls - before.Calls
					r.server.Usec += after.Usec - before.Usec
				}
				done += k
			}
			b.StopTimer()
			for _, r := range qs {
				b.ReportMetric(float64(r.elapsed.Microseconds())/float64(b.N), r.label+"-µs")
				b.ReportMetric(r.server.PerCall(), r.label+"-redis-µs")
			}
			if first, last := qs[0], qs[len(qs)-1]; len(qs) > 1 {
				b.ReportMetric(last.server.PerCall()/first.server.PerCall(), "ratio-redis")
				b.ReportMetric(float64(last.elapsed)/float64(first.elapsed), "ratio")
			}
		})
	}
	run("Stats", "evalsha", func(r *operateReady) error {
		st, err := r.q.Stats(ctx)
		if err == nil && st.Ready != int64(r.n) {
			err = fmt.Errorf("stats: %d ready, want %d", st.Ready, r.n)
		}
		return err
	})
	run("Peek", "lrange", func(r *operateReady) error {
		items, err := r.q.Peek(ctx, 100)
		if err == nil && len(items) != 100 {
			err = fmt.Errorf("peek: %d items, want 100", len(items))
		}
		return err
	})
}

// BenchmarkReceiveServer: one op is one Receive of a ready item, without
// its Ack, so that the only script the timed loop runs is the lease script
// (receive.lua): redis-µs/call is that script's server time (calls/op above
// 1 counts the queue's own background calls, a few per second). It uses
// only what the code before Pause had, so it runs in both trees of the
// pause A/B (docs/benchmarks.md).
func BenchmarkReceiveServer(b *testing.B) {
	ctx := context.Background()
	rdb, q := benchQueue(b)
	benchFill(b, rdb, redistest.KeysOf(q.Name()).Ready, benchStoredItem(b, rdb), b.N+1)
	if _, err := q.Receive(ctx); err != nil { // starts the background, loads the script
		b.Fatal(err)
	}
	before := redistest.ReadCommandStat(b, rdb, "evalsha")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := q.Receive(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	operateReport(b, before, redistest.ReadCommandStat(b, rdb, "evalsha"))
}

// leaseBlock is how many calls of one variant BenchmarkLeasePauseCheck
// makes between two readings of INFO commandstats.
const leaseBlock = 500

// BenchmarkLeasePauseCheck isolates the server-side cost of the pause
// check in the lease script: it runs receive.lua as it is ("with": KEYS[6]
// and the HEXISTS of the paused flag) and receive.lua without that block
// ("without": five keys, as before Pause), on one server, in alternating
// blocks of leaseBlock calls, each leasing one ready item of a queue whose
// meta hash exists (as it does once a queue registered its codec) and is
// not paused. One op is one call of each. with- and without-redis-µs/call
// are each variant's EVALSHA time on the server; extra-redis-µs is their
// difference, the check's cost; with- and without-ns are the client's time
// per call, round trip included.
func BenchmarkLeasePauseCheck(b *testing.B) {
	ctx := context.Background()
	withSrc, withoutSrc := leaseScripts(b)
	with, without := redis.NewScript(withSrc), redis.NewScript(withoutSrc)
	if with.Hash() != lua.Receive.Hash() {
		b.Fatal("internal/lua/receive.lua on disk is not the script the package embeds")
	}
	srv := redistest.StartServer(b)
	rdb := srv.Client(b)
	k := redistest.KeysOf(redistest.QueueName(b))
	if err := rdb.HSet(ctx, k.Meta, keys.MetaCodec, "msgpack").Err(); err != nil {
		b.Fatal(err)
	}
	benchFill(b, rdb, k.Ready, benchStoredItem(b, rdb), 2*b.N+2)
	withKeys := []string{k.Ready, k.Leases, k.Inflight, k.Claimed, k.DeadReady, k.Meta}
	withoutKeys := withKeys[:5]
	var seq int
	call := func(s *redis.Script, ks []string) error {
		seq++
		res, err := s.Run(ctx, rdb, ks, time.Minute.Milliseconds(), 1, "p"+strconv.Itoa(seq)+"-", "").StringSlice()
		if err == nil && len(res) != 2 {
			err = fmt.Errorf("lease: reply %q, want one lease", res)
		}
		return err
	}
	// Warm-up: both scripts loaded (Run falls back to EVAL once).
	if err := call(with, withKeys); err != nil {
		b.Fatal(err)
	}
	if err := call(without, withoutKeys); err != nil {
		b.Fatal(err)
	}
	type acc struct {
		st      redistest.CommandStat
		elapsed time.Duration
	}
	var wa, wo acc
	block := func(a *acc, s *redis.Script, ks []string, n int) {
		before := redistest.ReadCommandStat(b, rdb, "evalsha")
		t0 := time.Now()
		for range n {
			if err := call(s, ks); err != nil {
				b.Fatal(err)
			}
		}
		a.elapsed += time.Since(t0)
		after := redistest.ReadCommandStat(b, rdb, "evalsha")
		a.st.Calls += after.Calls - before.Calls
		a.st.Usec += after.Usec - before.Usec
	}
	b.ResetTimer()
	for done, i := 0, 0; done < b.N; i++ {
		n := min(leaseBlock, b.N-done)
		if i%2 == 0 {
			block(&wa, with, withKeys, n)
			block(&wo, without, withoutKeys, n)
		} else {
			block(&wo, without, withoutKeys, n)
			block(&wa, with, withKeys, n)
		}
		done += n
	}
	b.StopTimer()
	b.ReportMetric(wa.st.PerCall(), "with-redis-µs/call")
	b.ReportMetric(wo.st.PerCall(), "without-redis-µs/call")
	b.ReportMetric(wa.st.PerCall()-wo.st.PerCall(), "extra-redis-µs")
	b.ReportMetric(float64(wa.elapsed.Nanoseconds())/float64(b.N), "with-ns")
	b.ReportMetric(float64(wo.elapsed.Nanoseconds())/float64(b.N), "without-ns")
}

// leaseScripts returns the lease script as the package embeds it (the
// prelude, then receive.lua) and the same without its pause check.
func leaseScripts(b *testing.B) (with, without string) {
	b.Helper()
	read := func(name string) string {
		src, err := os.ReadFile(filepath.Join("..", "internal", "lua", name))
		if err != nil {
			b.Fatal(err)
		}
		return string(src)
	}
	with = read("prelude.lua") + read("receive.lua")
	const (
		from = "if redis.call('HEXISTS', KEYS[6], 'paused') == 1 then"
		to   = "-- Type checks:"
	)
	i, j := strings.Index(with, from), strings.Index(with, to)
	if i < 0 || j < i {
		b.Skip("receive.lua has no pause check where this benchmark expects it")
	}
	return with, with[:i] + with[j:]
}

func operateLabel(n int) string {
	if n >= 1_000_000 {
		return strconv.Itoa(n/1_000_000) + "M"
	}
	return strconv.Itoa(n/1000) + "k"
}

// operateReport reports the server's time per call between two readings,
// and how many calls per op the server saw (1 when nothing else ran).
func operateReport(b *testing.B, before, after redistest.CommandStat) {
	calls := after.Calls - before.Calls
	if calls <= 0 {
		return
	}
	b.ReportMetric(float64(after.Usec-before.Usec)/float64(calls), "redis-µs/call")
	b.ReportMetric(float64(calls)/float64(b.N), "calls/op")
}
