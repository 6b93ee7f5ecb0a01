package delayed_test

// Recurring schedules: how late their ticks fire, against delayed items in
// the same run, and what an idle schedule costs the server. See
// docs/benchmarks.md:
//
//	go test -run '^$' -bench '^BenchmarkSchedule' -benchtime 1x ./delayed/
//
// Both benchmarks last a minute or more per op; -short skips them.

import (
	"bufio"
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
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
	// scheduleWindow is how long BenchmarkScheduleLateness runs its
	// schedule (and offers its baseline items).
	scheduleWindow = 60 * time.Second
	// scheduleProcesses is how many processes (clients of their own, each
	// with a delayed queue that transfers) hold the queues.
	scheduleProcesses = 3
	// scheduleIdleWindow is how long BenchmarkScheduleIdleCost counts the
	// server's commands.
	scheduleIdleWindow = 30 * time.Second
	// scheduleMonitorWindow is how long it counts the commands sent, first.
	scheduleMonitorWindow = 15 * time.Second
)

// lateLog records deliveries: lateness (time.Since(DueAt)), due times, and
// how often each ID arrived.
type lateLog struct {
	mu    sync.Mutex
	late  []time.Duration
	dues  []time.Time
	count map[string]int
}

func (l *lateLog) handler(_ context.Context, d *blocking.Delivery[seedtest.BenchValue]) error {
	late := time.Since(d.DueAt)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == nil {
		l.count = map[string]int{}
	}
	l.count[d.ID]++
	l.late = append(l.late, late)
	l.dues = append(l.dues, d.DueAt)
	return nil
}

// report reports p50, p99 and max of the lateness, in ms, as
// "<prefix>-p50-ms" and so on.
func (l *lateLog) report(b *testing.B, prefix string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	late := slices.Clone(l.late)
	if len(late) == 0 {
		b.Errorf("%s: nothing delivered", prefix)
		return
	}
	slices.Sort(late)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(late[len(late)/2]), prefix+"-p50-ms")
	b.ReportMetric(ms(late[len(late)*99/100]), prefix+"-p99-ms")
	b.ReportMetric(ms(late[len(late)-1]), prefix+"-max-ms")
	b.ReportMetric(ms(late[0]), prefix+"-min-ms")
}

// BenchmarkScheduleLateness: an "@every 1s" schedule on a queue held by
// scheduleProcesses processes (each a redis.Client of its own with a
// blocking queue and a delayed queue that transfers), for scheduleWindow;
// one of them consumes the ticks and records each one's lateness,
// time.Since(DueAt). The baseline, in the same minute on the same server:
// a second queue, held the same way, to which one process offers an item
// with Offer(ctx, v, time.Second) once a second. Reported: "tick-*-ms" and
// "item-*-ms" (p50, p99, max, min of the lateness), "ticks" delivered with
// a due time within the window, "ticks-expected" (every second from the
// first tick to the end of the window), "duplicates" (deliveries of an ID
// already delivered; must be 0) and "gaps" (seconds within the window
// without a tick; must be 0). One op lasts scheduleWindow plus a few
// seconds: run it with -benchtime 1x.
func BenchmarkScheduleLateness(b *testing.B) {
	if testing.Short() {
		b.Skip("lasts a minute")
	}
	ctx := context.Background()
	for range b.N {
		scheduleLatenessRound(ctx, b)
	}
}

func scheduleLatenessRound(ctx context.Context, b *testing.B) {
	srv := redistest.StartServer(b)
	name := redistest.QueueName(b)
	type process struct {
		sq, iq   *blocking.Queue[seedtest.BenchValue] // schedule's queue, items' queue
		sdq, idq *delayed.Queue[seedtest.BenchValue]
	}
	procs := make([]process, scheduleProcesses)
	for i := range procs {
		rdb := srv.Client(b)
		p := &procs[i]
		p.sq = blocking.New[seedtest.BenchValue](rdb, name+"-sched")
		p.sdq = delayed.New(p.sq)
		p.iq = blocking.New[seedtest.BenchValue](rdb, name+"-items")
		p.idq = delayed.New(p.iq)
	}
	defer func() {
		for _, p := range procs {
			_ = p.sdq.Close()
			_ = p.idq.Close()
			_ = p.sq.Close()
			_ = p.iq.Close()
		}
	}()

	var ticks, items lateLog
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = procs[0].sq.Consume(cctx, ticks.handler) })
	wg.Go(func() { _ = procs[0].iq.Consume(cctx, items.handler) })
	defer func() {
		cancel()
		wg.Wait()
	}()

	start := time.Now()
	if err := procs[0].sdq.Schedule(ctx, "every-second", "@every 1s", seedtest.NewBenchValue(1)); err != nil {
		b.Fatal(err)
	}
	infos, err := procs[0].sdq.Schedules(ctx)
	if err != nil || len(infos) != 1 {
		b.Fatalf("Schedules = %v, %v", infos, err)
	}
	first := infos[0].Next
	end := start.Add(scheduleWindow)

	// The baseline: one delayed item a second, from the first process.
	next := time.Now()
	for i := 0; time.Now().Before(end.Add(-time.Second)); i++ {
		if _, err := procs[0].idq.Offer(ctx, seedtest.NewBenchValue(i), time.Second); err != nil {
			b.Fatal(err)
		}
		next = next.Add(time.Second)
		time.Sleep(time.Until(next))
	}
	time.Sleep(time.Until(end) + 3*time.Second) // the window's last tick and item
	b.StopTimer()
	cancel()
	wg.Wait()

	ticks.report(b, "tick")
	items.report(b, "item")

	ticks.mu.Lock()
	defer ticks.mu.Unlock()
	dups := 0
	for _, n := range ticks.count {
		dups += n - 1
	}
	var in []time.Time
	seen := map[int64]bool{}
	for _, due := range ticks.dues {
		if !due.After(end) && !seen[due.UnixMilli()] {
			seen[due.UnixMilli()] = true
			in = append(in, due)
		}
	}
	slices.SortFunc(in, func(a, b time.Time) int { return a.Compare(b) })
	gaps := 0
	if len(in) > 0 {
		if d := in[0].Sub(first); d != 0 {
			b.Logf("first tick due %v, Schedules said %v", in[0], first)
			gaps += int(d / time.Second)
		}
		for i := 1; i < len(in); i++ {
			if d := in[i].Sub(in[i-1]); d != time.Second {
				b.Logf("tick due %v follows %v", in[i], in[i-1])
				gaps += int(d/time.Second) - 1
			}
		}
	}
	expected := int(end.Sub(first)/time.Second) + 1
	b.ReportMetric(float64(len(in)), "ticks")
	b.ReportMetric(float64(expected), "ticks-expected")
	b.ReportMetric(float64(dups), "duplicates")
	b.ReportMetric(float64(gaps), "gaps")
	if dups != 0 {
		b.Errorf("%d duplicate ticks", dups)
	}
}

// commandStats reads every command's line of INFO commandstats.
func commandStats(b *testing.B, rdb *redis.Client) map[string]redistest.CommandStat {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	out := map[string]redistest.CommandStat{}
	for line := range strings.SplitSeq(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		cmd, fields, _ := strings.Cut(rest, ":")
		var st redistest.CommandStat
		for field := range strings.SplitSeq(fields, ",") {
			k, v, _ := strings.Cut(field, "=")
			switch k {
			case "calls":
				st.Calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				st.Usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		out[cmd] = st
	}
	return out
}

// monitor counts the commands clients send to the server at addr, by
// name (lower case), from MONITOR: the commands that scripts run are left
// out (MONITOR shows them too, marked "lua"). stop ends it and returns the
// counts.
func monitor(b *testing.B, addr string) (stop func() map[string]int64) {
	b.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		b.Fatal(err)
	}
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "+OK") {
		b.Fatalf("MONITOR: %q, %v", line, err)
	}
	counts := map[string]int64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			_, rest, ok := strings.Cut(line, "[")
			if !ok {
				continue
			}
			source, rest, _ := strings.Cut(rest, "] ")
			if strings.HasSuffix(source, " lua") {
				continue
			}
			cmd, _, _ := strings.Cut(strings.TrimPrefix(rest, `"`), `"`)
			counts[strings.ToLower(cmd)]++
		}
	}()
	return func() map[string]int64 {
		_ = conn.Close()
		<-done
		return counts
	}
}

// BenchmarkScheduleIdleCost: what one process's transfer worker sends to
// an idle queue, with one "@every 1s" schedule and with none, each queue on
// a redis-server of its own, watched over the same windows.
// Nobody consumes: the schedule's ticks pile up in the ready list.
// Reported, per queue ("none", "sched"): "<q>-calls/s", the commands the
// process sent per second (from MONITOR over scheduleMonitorWindow, so the
// commands its scripts run are not counted again; the benchmark's own INFO
// and CONFIG calls are left out), each command's share of them as
// "<q>-<cmd>/s", and "<q>-redis-µs/s", the server's time for them per
// second of wall-clock time (INFO commandstats over the following
// scheduleIdleWindow, after CONFIG RESETSTAT and without MONITOR: a
// script's time includes the commands it runs; a command that scripts run
// too counts for the share the process sent). One op lasts
// scheduleMonitorWindow+scheduleIdleWindow and a few seconds: run it with
// -benchtime 1x.
func BenchmarkScheduleIdleCost(b *testing.B) {
	if testing.Short() {
		b.Skip("lasts most of a minute")
	}
	ctx := context.Background()
	type side struct {
		label string
		srv   *redistest.Server
		rdb   *redis.Client
		stop  func() map[string]int64
	}
	sides := []*side{{label: "none"}, {label: "sched"}}
	for range b.N {
		for _, s := range sides {
			s.srv = redistest.StartServer(b)
			s.rdb = s.srv.Client(b)
			q := blocking.New[seedtest.BenchValue](s.srv.Client(b), redistest.QueueName(b))
			dq := delayed.New(q)
			defer func() {
				_ = dq.Close()
				_ = q.Close()
			}()
			if s.label == "sched" {
				if err := dq.Schedule(ctx, "every-second", "@every 1s", seedtest.NewBenchValue(1)); err != nil {
					b.Fatal(err)
				}
			}
		}
		time.Sleep(3 * time.Second) // settled: the schedule's first ticks materialized
		// First what the process sends, from MONITOR (which slows every
		// command down while attached), then, without it, what the
		// server spends.
		for _, s := range sides {
			s.stop = monitor(b, s.srv.Addr())
		}
		t0 := time.Now()
		time.Sleep(scheduleMonitorWindow)
		monitored := time.Since(t0).Seconds()
		sent := map[*side]map[string]int64{}
		for _, s := range sides {
			sent[s] = s.stop()
			if err := s.rdb.ConfigResetStat(ctx).Err(); err != nil {
				b.Fatal(err)
			}
		}
		t0 = time.Now()
		time.Sleep(scheduleIdleWindow)
		elapsed := time.Since(t0).Seconds()
		for _, s := range sides {
			stats := commandStats(b, s.rdb)
			var calls int64
			var usec float64
			for cmd, n := range sent[s] {
				if cmd == "info" || cmd == "config" {
					continue
				}
				calls += n
				rate := float64(n) / monitored
				b.ReportMetric(rate, s.label+"-"+cmd+"/s")
				// commandstats counts the command whoever ran it: the
				// share sent by the client.
				if st, ok := stats[cmd]; ok && st.Calls > 0 {
					usec += float64(st.Usec) * min(1, rate*elapsed/float64(st.Calls))
				}
			}
			b.ReportMetric(float64(calls)/monitored, s.label+"-calls/s")
			b.ReportMetric(usec/elapsed, s.label+"-redis-µs/s")
		}
	}
}
