package delayed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use, whatever the machine has

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// tickLog collects the ticks a consumer receives.
type tickLog struct {
	mu    sync.Mutex
	ids   []string
	dues  []time.Time
	late  []time.Duration
	count map[string]int
}

func (l *tickLog) add(id string, due time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == nil {
		l.count = map[string]int{}
	}
	l.count[id]++
	l.ids = append(l.ids, id)
	l.dues = append(l.dues, due)
	l.late = append(l.late, time.Since(due))
}

func (l *tickLog) snapshot() ([]string, []time.Time, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := map[string]int{}
	for k, v := range l.count {
		c[k] = v
	}
	return append([]string(nil), l.ids...), append([]time.Time(nil), l.dues...), c
}

// consumeTicks receives on q until ctx ends.
func consumeTicks(ctx context.Context, t *testing.T, q *blocking.Queue[string], log *tickLog) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			if d.Headers[delayed.HeaderSchedule] == "" {
				t.Errorf("tick %s has no schedule header", d.ID)
			}
			log.add(d.ID, d.DueAt)
			return nil
		})
	}()
	return done
}

// A schedule held by three processes, none a leader, fires each tick
// once; a process leaving midway changes nothing.
func TestScheduleEverySecondThreeProcesses(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		var dqs []*delayed.Queue[string]
		var qs []*blocking.Queue[string]
		for range 3 {
			c := redistest.NewClientLike(t, rdb)
			q := blocking.New[string](c, name)
			dq := delayed.New(q)
			t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
			dqs, qs = append(dqs, dq), append(qs, q)
		}
		if err := dqs[0].Schedule(ctx, "tick", "@every 1s", "hello"); err != nil {
			t.Fatal(err)
		}
		var log tickLog
		cctx, stop := context.WithCancel(ctx)
		done := consumeTicks(cctx, t, qs[1], &log)
		time.Sleep(3500 * time.Millisecond)
		_ = dqs[2].Close() // one process leaves
		_ = qs[2].Close()
		time.Sleep(3500 * time.Millisecond)
		infos, err := dqs[0].Schedules(ctx)
		if err != nil || len(infos) != 1 || infos[0].Name != "tick" || infos[0].Spec != "@every 1s" || infos[0].Last.IsZero() ||
			!infos[0].Next.After(infos[0].Last) {
			t.Fatalf("Schedules = %+v, %v", infos, err)
		}
		if ok, err := dqs[0].Unschedule(ctx, "tick"); err != nil || !ok {
			t.Fatalf("Unschedule = %v, %v", ok, err)
		}
		unscheduled := time.Now()
		time.Sleep(1500 * time.Millisecond)
		stop()
		<-done
		ids, dues, count := log.snapshot()
		if len(ids) < 5 {
			t.Fatalf("%d ticks in 7 s: %v", len(ids), ids)
		}
		for id, n := range count {
			if n != 1 {
				t.Errorf("tick %s delivered %d times", id, n)
			}
		}
		for i := 1; i < len(dues); i++ {
			if gap := dues[i].Sub(dues[i-1]); gap != time.Second {
				t.Errorf("ticks %s and %s are %v apart, want 1s (no gap, no duplicate)", ids[i-1], ids[i], gap)
			}
		}
		for i, due := range dues {
			if due.After(unscheduled) {
				t.Errorf("tick %s fired after Unschedule", ids[i])
			}
			if !strings.HasPrefix(ids[i], "tick@") {
				t.Errorf("tick ID %q", ids[i])
			}
		}
		if ok, err := dqs[0].Unschedule(ctx, "tick"); err != nil || ok {
			t.Fatalf("second Unschedule = %v, %v", ok, err)
		}
	})
}

// Ticks missed while no process ran: the latest fires once, older ones
// are skipped (the default policy).
func TestScheduleMissedTicks(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	dq := delayed.New(q, delayed.WithoutTransfer()) // nobody runs the schedule yet
	t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
	if err := dq.Schedule(ctx, "s", "@every 1s", "v"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second) // ~6 ticks missed
	var log tickLog
	cctx, stop := context.WithCancel(ctx)
	done := consumeTicks(cctx, t, q, &log) // a process starts
	time.Sleep(2500 * time.Millisecond)
	stop()
	<-done
	ids, dues, _ := log.snapshot()
	if len(ids) < 2 {
		t.Fatalf("ticks after the restart: %v", ids)
	}
	// The first is the latest missed tick, fired at once; then the
	// schedule goes on, one per second.
	started := dues[0]
	if old := time.Since(started); old > 6*time.Second {
		t.Errorf("the first tick after the restart is %v old: an older missed tick fired", old)
	}
	for i := 1; i < len(dues); i++ {
		if dues[i].Sub(dues[i-1]) < time.Second {
			t.Errorf("ticks %v: more than one missed tick fired", ids)
		}
	}
}

// Scheduling again with a new spec withdraws the old spec's ticks: no
// tick fires twice, and the new spec takes over.
func TestScheduleUpsert(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[string](t, rdb, redistest.QueueName(t))
		if err := dq.Schedule(ctx, "s", "@every 1s", "old"); err != nil {
			t.Fatal(err)
		}
		var log tickLog
		cctx, stop := context.WithCancel(ctx)
		done := consumeTicks(cctx, t, q, &log)
		time.Sleep(2200 * time.Millisecond)
		if err := dq.Schedule(ctx, "s", "@every 1s", "same spec, new value"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		if err := dq.Schedule(ctx, "s", "*/2 * * * * *", "new"); err != nil { // every even second
			t.Fatal(err)
		}
		changed := time.Now()
		time.Sleep(4500 * time.Millisecond)
		stop()
		<-done
		ids, dues, count := log.snapshot()
		for id, n := range count {
			if n != 1 {
				t.Errorf("tick %s delivered %d times", id, n)
			}
		}
		after := 0
		for i, due := range dues {
			if due.After(changed.Add(time.Second)) {
				after++
				if due.Second()%2 != 0 || due.Nanosecond() != 0 {
					t.Errorf("tick %s at %v after the spec changed to even seconds", ids[i], due)
				}
			}
		}
		if after < 1 {
			t.Errorf("no tick of the new spec: %v", ids)
		}
	})
}

// A cron with seconds and a time zone falls on that zone's instants.
func TestScheduleTimeZone(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	_, dq := open[string](t, rdb, "tz", delayed.WithoutTransfer())
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	if err := dq.Schedule(ctx, "nightly", "30 0 3 * * *", "report", delayed.WithTimeZone(ny)); err != nil {
		t.Fatal(err)
	}
	if err := dq.Schedule(ctx, "tokyo", "CRON_TZ=Asia/Tokyo 0 9 * * 1-5", "standup"); err != nil {
		t.Fatal(err)
	}
	infos, err := dq.Schedules(ctx)
	if err != nil || len(infos) != 2 {
		t.Fatalf("Schedules = %+v, %v", infos, err)
	}
	n := infos[0].Next.In(ny)
	if infos[0].Name != "nightly" || n.Hour() != 3 || n.Minute() != 0 || n.Second() != 30 || !n.After(time.Now()) || n.Sub(time.Now()) > 24*time.Hour {
		t.Errorf("nightly next = %v", n)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	if n := infos[1].Next.In(tokyo); n.Hour() != 9 || n.Weekday() == time.Saturday || n.Weekday() == time.Sunday {
		t.Errorf("tokyo next = %v", n)
	}
}

func TestScheduleBadInput(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	_, dq := open[string](t, rdb, "bad", delayed.WithoutTransfer())
	cases := map[string]error{
		"bad spec":      dq.Schedule(ctx, "a", "every minute", "v"),
		"six stars+":    dq.Schedule(ctx, "a", "* * * * * * *", "v"),
		"bad field":     dq.Schedule(ctx, "a", "61 * * * *", "v"),
		"empty spec":    dq.Schedule(ctx, "a", " ", "v"),
		"empty name":    dq.Schedule(ctx, "", "@hourly", "v"),
		"long name":     dq.Schedule(ctx, strings.Repeat("n", 201), "@hourly", "v"),
		"bad zone":      dq.Schedule(ctx, "a", "CRON_TZ=Nowhere/Else 0 3 * * *", "v"),
		"bad policy":    dq.Schedule(ctx, "a", "@hourly", "v", delayed.WithMissedTicks("sometimes")),
		"unschedule ''": func() error { _, err := dq.Unschedule(ctx, ""); return err }(),
	}
	for name, err := range cases {
		if !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", name, err)
		}
	}
	if infos, err := dq.Schedules(ctx); err != nil || len(infos) != 0 {
		t.Errorf("Schedules after refused calls = %v, %v", infos, err)
	}
}

// slowScheduleRead holds the reply to the first read of a schedules hash:
// the time between Unschedule's read of the record and its script, during
// which another process materializes ticks.
type slowScheduleRead struct {
	hold time.Duration
	once *sync.Once
}

func (slowScheduleRead) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h slowScheduleRead) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if a := cmd.Args(); len(a) == 3 && a[0] == "hget" && strings.HasSuffix(fmt.Sprint(a[1]), ":schedules") {
			h.once.Do(func() { time.Sleep(h.hold) })
		}
		return err
	}
}
func (slowScheduleRead) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// No tick fires after Unschedule returns, even when another process
// materialized ticks between Unschedule's read and its write (before the
// fix, two ticks fired up to 1.8 s after it returned).
func TestUnscheduleWhileTicksAreMaterialized(t *testing.T) {
	t.Parallel()
	srv := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q, dq := open[string](t, srv, name) // process A runs the schedule
	if err := dq.Schedule(ctx, "s", "@every 1s", "v"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	b := redis.NewClient(&redis.Options{Addr: srv.Options().Addr})
	t.Cleanup(func() { _ = b.Close() })
	b.AddHook(slowScheduleRead{hold: 2500 * time.Millisecond, once: &sync.Once{}})
	qb := blocking.New[string](b, name)
	dqb := delayed.New(qb, delayed.WithoutTransfer()) // process B
	t.Cleanup(func() { _ = dqb.Close(); _ = qb.Close() })
	ok, err := dqb.Unschedule(ctx, "s")
	if err != nil || !ok {
		t.Fatalf("Unschedule = %v, %v", ok, err)
	}
	done := time.Now()
	if n, _ := dq.Size(ctx); n != 0 {
		t.Errorf("%d ticks pending after Unschedule", n)
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		d, err := q.Receive(rctx)
		cancel()
		if err != nil {
			break
		}
		_ = d.Ack(ctx)
		if d.DueAt.After(done) {
			t.Errorf("tick %s fired %v after Unschedule returned", d.ID, d.DueAt.Sub(done).Round(time.Millisecond))
		}
	}
}

func TestScheduleTimeZoneByName(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	_, dq := open[string](t, rdb, "tzname", delayed.WithoutTransfer())
	for _, loc := range []*time.Location{time.Local, time.FixedZone("UTC+1", 3600)} {
		if err := dq.Schedule(ctx, "a", "0 3 * * *", "v", delayed.WithTimeZone(loc)); !errors.Is(err, delayed.ErrInvalidArgument) {
			t.Errorf("WithTimeZone(%v) = %v, want ErrInvalidArgument", loc, err)
		}
	}
}
