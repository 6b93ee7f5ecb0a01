package delayed_test

// Tests of the schedule defects of the second attack round (B5 to B10 in
// docs/hardening.md; each failed on the code before its fix), and of the
// missed-tick policies through Schedule with real processes.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use, whatever the machine has

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/schedule"
)

// scheduleNoPanic is dq.Schedule, with a panic reported as the error.
func scheduleNoPanic(ctx context.Context, dq *delayed.Queue[string], name, spec string, opts ...delayed.ScheduleOption) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return dq.Schedule(ctx, name, spec, "v", opts...)
}

// noSchedules checks that refused calls stored no schedule.
func noSchedules(ctx context.Context, t *testing.T, dq *delayed.Queue[string]) {
	t.Helper()
	if infos, err := dq.Schedules(ctx); err != nil || len(infos) != 0 {
		t.Errorf("Schedules after refused calls = %+v, %v", infos, err)
	}
}

// A spec that names a zone and nothing else is refused with
// ErrInvalidArgument (before: Schedule panicked in the cron parser).
func TestScheduleZoneOnlySpecRefused(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		_, dq := open[string](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
		for _, spec := range []string{"CRON_TZ=UTC", "TZ=", "CRON_TZ=Europe/Berlin", "CRON_TZ= ", "TZ=UTC\t"} {
			if err := scheduleNoPanic(ctx, dq, "x", spec); !errors.Is(err, delayed.ErrInvalidArgument) || !strings.Contains(err.Error(), "zone") {
				t.Errorf("Schedule(%q) = %v, want ErrInvalidArgument naming the zone", spec, err)
			}
		}
		noSchedules(ctx, t, dq)
	})
}

// A time.FixedZone is refused, whatever its name, unless it is the zone of
// that name at every instant (before: FixedZone("UTC", 5h) and
// FixedZone("Europe/Berlin", -7h) were stored by name, and ticks fell at
// UTC's and Berlin's times, not at the offset given).
func TestScheduleFixedZoneRefused(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		_, dq := open[string](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
		for _, loc := range []*time.Location{
			time.FixedZone("UTC", 5*3600),
			time.FixedZone("Europe/Berlin", -7*3600),
			time.FixedZone("Europe/Berlin", 3600), // Berlin's offset in winter only
			time.FixedZone("America/New_York", -5*3600),
			time.Local,
		} {
			if err := scheduleNoPanic(ctx, dq, "a", "0 3 * * *", delayed.WithTimeZone(loc)); !errors.Is(err, delayed.ErrInvalidArgument) {
				t.Errorf("WithTimeZone(%v) = %v, want ErrInvalidArgument", loc, err)
			}
		}
		noSchedules(ctx, t, dq)
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		// A zone that is the named one at every instant is that zone.
		for _, loc := range []*time.Location{berlin, time.UTC, time.FixedZone("UTC", 0)} {
			if err := dq.Schedule(ctx, "a", "0 3 * * *", "v", delayed.WithTimeZone(loc)); err != nil {
				t.Errorf("WithTimeZone(%v) = %v", loc, err)
			}
		}
	})
}

// The process's own zone is refused in a spec's prefix as in WithTimeZone
// (before: "CRON_TZ=Local" and "TZ=Local" were accepted, and each process
// planned the schedule in its own zone).
func TestScheduleLocalZoneInSpecRefused(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		_, dq := open[string](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
		for _, spec := range []string{"CRON_TZ=Local 0 3 * * *", "TZ=Local 0 3 * * *", "CRON_TZ=localtime 0 3 * * *", "TZ=Local @daily"} {
			if err := scheduleNoPanic(ctx, dq, "a", spec); !errors.Is(err, delayed.ErrInvalidArgument) {
				t.Errorf("Schedule(%q) = %v, want ErrInvalidArgument", spec, err)
			}
		}
		noSchedules(ctx, t, dq)
	})
}

// seedRecord stores a schedule's record as raw bytes, due at dueMs: what
// another version, a hand, or a bug may have left in Redis.
func seedRecord(ctx context.Context, t *testing.T, rdb redis.UniversalClient, queue, name, raw string, dueMs int64) {
	t.Helper()
	k := redistest.KeysOf(queue)
	if raw != "" {
		if err := rdb.HSet(ctx, k.Schedules, name, raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.ZAdd(ctx, k.ScheduleDue, redis.Z{Score: float64(dueMs), Member: name}).Err(); err != nil {
		t.Fatal(err)
	}
}

// receiveTicks receives (and acks) ticks from q until done says enough,
// and fails the test when that takes longer than within.
func receiveTicks(ctx context.Context, t *testing.T, q *blocking.Queue[string], within time.Duration, done func([]*blocking.Delivery[string]) bool) []*blocking.Delivery[string] {
	t.Helper()
	var got []*blocking.Delivery[string]
	deadline := time.Now().Add(within)
	for !done(got) {
		if time.Now().After(deadline) {
			var ids []string
			for _, d := range got {
				ids = append(ids, d.ID)
			}
			t.Fatalf("ticks received within %v: %v", within, ids)
		}
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		d, err := q.Receive(rctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		got = append(got, d)
	}
	return got
}

// The missed-tick policies through Schedule, with real processes: every
// process of the queue is down for a while (the stored next tick is made
// that old), then one starts. MissedLatest fires the latest tick before
// the restart, MissedAll the ticks since the outage began (the latest 100),
// MissedSkip none of them; then the schedule goes on, one tick a second,
// no tick twice. A tick materialized at the restart carries its time as
// EnqueuedAt: a tick due before that was missed. Before the fix, after 48
// hours, MissedLatest fired the tick of 20 h 13 m ago and MissedAll the 100
// ticks from there.
func TestScheduleMissedTicksAfterOutage(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, outage := range []time.Duration{10 * time.Second, 48 * time.Hour} {
			for _, policy := range []delayed.MissedTicks{delayed.MissedLatest, delayed.MissedAll, delayed.MissedSkip} {
				t.Run(fmt.Sprintf("%s after %v", policy, outage), func(t *testing.T) {
					t.Parallel()
					missedAfterOutage(t, rdb, policy, outage)
				})
			}
		}
	})
}

func missedAfterOutage(t *testing.T, rdb redis.UniversalClient, policy delayed.MissedTicks, outage time.Duration) {
	ctx := context.Background()
	name := redistest.QueueName(t)
	// Scheduled by a process that does not transfer: nobody runs it.
	_, dq0 := open[string](t, rdb, name, delayed.WithoutTransfer())
	if err := dq0.Schedule(ctx, "s", "@every 1s", "v", delayed.WithMissedTicks(policy)); err != nil {
		t.Fatal(err)
	}
	k := redistest.KeysOf(name)
	raw, err := rdb.HGet(ctx, k.Schedules, "s").Result()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := schedule.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	next := now.Truncate(time.Second).Add(-outage)
	rec.Next = next.UnixMilli()
	seedRecord(ctx, t, rdb, name, "s", rec.Encode(), schedule.DueMs(next))

	q, _ := open[string](t, rdb, name) // a process starts
	var restart time.Time              // when the restart's plan ran (the server's clock, ms)
	got := receiveTicks(ctx, t, q, 30*time.Second, func(ds []*blocking.Delivery[string]) bool {
		if len(ds) == 0 {
			return false
		}
		restart = ds[0].EnqueuedAt
		after := 0
		for _, d := range ds {
			if d.DueAt.After(restart.Add(time.Second)) {
				after++
			}
		}
		return after >= 2
	})
	dues := make([]time.Time, len(got))
	seen := map[string]bool{}
	var missed, edge int
	for i, d := range got {
		if seen[d.ID] {
			t.Errorf("tick %s fired twice", d.ID)
		}
		seen[d.ID] = true
		dues[i] = d.DueAt
		switch {
		case d.DueAt.Before(restart):
			missed++
		case d.DueAt.Equal(restart): // materialized in the same millisecond: missed or not
			edge++
		}
	}
	slices.SortFunc(dues, time.Time.Compare)
	for i := 1; i < len(dues); i++ {
		if gap := dues[i].Sub(dues[i-1]); gap != time.Second {
			t.Errorf("ticks at %v and %v: %v apart, want 1s", dues[i-1], dues[i], gap)
		}
	}
	first := dues[0]
	t.Logf("%d ticks, %d missed, the first %v before the restart", len(dues), missed, restart.Sub(first))
	switch policy {
	case delayed.MissedLatest:
		if missed > 1 || !first.After(restart.Add(-time.Second)) {
			t.Errorf("%d missed ticks fired, the first %v before the restart; want the latest tick before it", missed, restart.Sub(first))
		}
	case delayed.MissedSkip:
		if missed > 0 {
			t.Errorf("%d missed ticks fired, the first %v before the restart", missed, restart.Sub(first))
		}
	case delayed.MissedAll:
		if outage/time.Second > schedule.MaxAll {
			// The latest 100: exactly 100 before the restart (give or take
			// the tick of the restart's millisecond), none older.
			if missed > schedule.MaxAll || missed+edge < schedule.MaxAll || first.Before(restart.Add(-(schedule.MaxAll+1)*time.Second)) {
				t.Errorf("%d missed ticks fired (%d in the restart's millisecond), the first %v before the restart; want the latest %d",
					missed, edge, restart.Sub(first), schedule.MaxAll)
			}
		} else if !first.Equal(next) {
			t.Errorf("the first tick after the restart is %v, want the stored next %v: missed ticks were dropped", first, next)
		}
	}
}

// ofSchedule counts the ticks of schedule name among ds.
func ofSchedule(ds []*blocking.Delivery[string], name string) int {
	n := 0
	for _, d := range ds {
		if d.Headers[delayed.HeaderSchedule] == name {
			n++
		}
	}
	return n
}

// process starts a process of queue name that transfers it and logs to
// logger, on a client of its own; it stops in t.Cleanup.
func process(t *testing.T, rdb redis.UniversalClient, name string, logger *slog.Logger) *blocking.Queue[string] {
	t.Helper()
	q := blocking.New[string](redistest.NewClientLike(t, rdb), name, blocking.WithLogger(logger))
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
	return q
}

// goodFires schedules "good" every second on queue name and receives
// three of its ticks from q, and no tick of another schedule; it returns
// a delayed queue that does not transfer, for more calls.
func goodFires(ctx context.Context, t *testing.T, rdb redis.UniversalClient, name string, q *blocking.Queue[string]) *delayed.Queue[string] {
	t.Helper()
	_, dq := open[string](t, rdb, name, delayed.WithoutTransfer())
	if err := dq.Schedule(ctx, "good", "@every 1s", "v"); err != nil {
		t.Fatal(err)
	}
	got := receiveTicks(ctx, t, q, 15*time.Second, func(ds []*blocking.Delivery[string]) bool { return ofSchedule(ds, "good") >= 3 })
	if n := len(got) - ofSchedule(got, "good"); n != 0 {
		t.Errorf("%d ticks of the unreadable schedules fired", n)
	}
	return dq
}

// A record whose spec names a zone and nothing else, found in Redis,
// costs a log line: every process that transfers the queue goes on, and
// the queue's other schedules fire (before: the transfer goroutine
// panicked, and with it every process of the queue, at every restart).
func TestScheduleStoredZoneOnlySpec(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for i, spec := range []string{"CRON_TZ=UTC", "TZ=", "CRON_TZ=Local 0 3 * * *"} {
			rec := fmt.Sprintf(`{"spec":%q,"missed":"latest","next":%d}`, spec, now.UnixMilli())
			seedRecord(ctx, t, rdb, name, "bad"+strconv.Itoa(i), rec, now.UnixMilli()-schedule.Lead.Milliseconds())
		}
		logger, logs := redistest.CaptureLogs()
		q := process(t, rdb, name, logger)
		process(t, rdb, name, logger) // a second process transfers the queue too
		goodFires(ctx, t, rdb, name, q)
		for i := range 3 {
			if !strings.Contains(logs.String(), "schedule=bad"+strconv.Itoa(i)) {
				t.Errorf("nothing logged about schedule bad%d:\n%s", i, logs)
			}
		}
	})
}

// seedUnreadable stores 50 schedules that cannot be planned, due before
// any other: 20 records that are no JSON, 20 specs that do not parse, and
// 10 due entries whose record is gone (two due at -inf). It returns the names of those with
// a record.
func seedUnreadable(ctx context.Context, t *testing.T, rdb redis.UniversalClient, queue string) []string {
	t.Helper()
	var named []string
	for i := range 20 {
		n := fmt.Sprintf("nojson%02d", i)
		seedRecord(ctx, t, rdb, queue, n, "{not json "+strconv.Itoa(i), int64(i))
		named = append(named, n)
	}
	for i := range 20 {
		n := fmt.Sprintf("badspec%02d", i)
		seedRecord(ctx, t, rdb, queue, n, fmt.Sprintf(`{"spec":"every %d minutes","missed":"latest","next":1000}`, i), int64(i))
		named = append(named, n)
	}
	for i := range 10 {
		seedRecord(ctx, t, rdb, queue, fmt.Sprintf("gone%02d", i), "", int64(i))
	}
	// Scores no script writes: -inf is due, first of all.
	k := redistest.KeysOf(queue)
	for _, n := range []string{"gone09", "nojson19"} {
		if err := rdb.ZAdd(ctx, k.ScheduleDue, redis.Z{Score: math.Inf(-1), Member: n}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return named
}

// Fifty unreadable schedules at the head of the due set cost a log line
// each, once: the schedule behind them fires, and Schedule and Unschedule
// work on them (before: the good schedule never fired, the transfer ran
// without pause, and Schedule and Unschedule of a bad name failed with
// the JSON error).
func TestScheduleUnreadableRecords(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		named := seedUnreadable(ctx, t, rdb, name)
		logger, logs := redistest.CaptureLogs()
		q := process(t, rdb, name, logger)
		dq := goodFires(ctx, t, rdb, name, q)
		// Each logged once, over several runs of the transfer.
		text := logs.String()
		for _, n := range named {
			if c := strings.Count(text, "schedule="+n+" "); c != 1 {
				t.Errorf("schedule %s logged %d times, want once", n, c)
			}
		}
		// Nothing is due any more but the good schedule: the bad ones are
		// set aside, the entries whose record is gone removed.
		k := redistest.KeysOf(name)
		now, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		due, err := rdb.ZRangeByScore(ctx, k.ScheduleDue, &redis.ZRangeBy{Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10)}).Result()
		if err != nil || slices.ContainsFunc(due, func(s string) bool { return s != "good" }) {
			t.Errorf("due at %v: %v, %v", now, due, err)
		}
		if n, err := rdb.ZScore(ctx, k.ScheduleDue, "gone00").Result(); !errors.Is(err, redis.Nil) {
			t.Errorf("the due entry of a schedule with no record: %v, %v", n, err)
		}

		// Schedule replaces an unreadable record, Unschedule removes one.
		if ok, err := dq.Unschedule(ctx, "nojson00"); err != nil || !ok {
			t.Errorf("Unschedule(no JSON) = %v, %v", ok, err)
		}
		if ok, err := dq.Unschedule(ctx, "badspec00"); err != nil || !ok {
			t.Errorf("Unschedule(bad spec) = %v, %v", ok, err)
		}
		for _, n := range []string{"nojson01", "badspec01"} {
			if err := dq.Schedule(ctx, n, "@every 1s", "v"); err != nil {
				t.Errorf("Schedule(%s) again = %v", n, err)
			}
		}
		receiveTicks(ctx, t, q, 15*time.Second, func(ds []*blocking.Delivery[string]) bool {
			return ofSchedule(ds, "nojson01") >= 1 && ofSchedule(ds, "badspec01") >= 1
		})
		for _, n := range []string{"nojson00", "badspec00"} {
			if ok, err := rdb.HExists(ctx, k.Schedules, n).Result(); err != nil || ok {
				t.Errorf("%s still stored after Unschedule: %v, %v", n, ok, err)
			}
		}
	})
}

// commandsProcessed reads the server's count of commands processed.
func commandsProcessed(ctx context.Context, t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no total_commands_processed in INFO stats:\n%s", info)
	return 0
}

// An idle queue with fifty unreadable schedules costs Redis about what an
// idle queue costs: a few commands a second (before: 17,000 to 26,000 a
// second, the transfer running again at once as long as a full batch of
// due schedules came back). A count of commands on a dedicated server.
func TestScheduleUnreadableRecordsIdle(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	ctx := context.Background()
	rdb := srv.Client(t)
	name := redistest.QueueName(t)
	named := seedUnreadable(ctx, t, rdb, name)
	logger, logs := redistest.CaptureLogs()
	process(t, rdb, name, logger)
	// The premise: the transfer runs and has read every record.
	redistest.WaitFor(t, 30*time.Second, "a log line for every unreadable record", func() bool {
		text := logs.String()
		return !slices.ContainsFunc(named, func(n string) bool { return !strings.Contains(text, "schedule="+n+" ") })
	})
	const window = 3 * time.Second
	start, began := commandsProcessed(ctx, t, rdb), time.Now()
	time.Sleep(window)
	n, took := commandsProcessed(ctx, t, rdb)-start-1, time.Since(began) // less our own INFO
	perSec := float64(n) / took.Seconds()
	t.Logf("%d commands in %v: %.0f a second", n, took.Round(time.Millisecond), perSec)
	if perSec > 100 {
		t.Errorf("an idle queue with unreadable schedules: %.0f commands a second (%d in %v)", perSec, n, took.Round(time.Millisecond))
	}
}

// The missed-tick policies through Schedule, with real processes and a
// real outage: a process runs the schedule and stops, no process runs for
// a few ticks, another process starts. The ticks the first process had
// materialized fire when the second starts, as any pending item; of the
// ticks missed in between, MissedAll fires each, MissedLatest the latest,
// MissedSkip none; no tick fires twice.
func TestScheduleMissedTicksRealOutage(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, policy := range []delayed.MissedTicks{delayed.MissedLatest, delayed.MissedAll, delayed.MissedSkip} {
			t.Run(string(policy), func(t *testing.T) {
				t.Parallel()
				missedRealOutage(t, rdb, policy)
			})
		}
	})
}

func missedRealOutage(t *testing.T, rdb redis.UniversalClient, policy delayed.MissedTicks) {
	ctx := context.Background()
	name := redistest.QueueName(t)
	k := redistest.KeysOf(name)
	// Process A runs the schedule, then stops.
	qa := blocking.New[string](redistest.NewClientLike(t, rdb), name)
	dqa := delayed.New(qa)
	if err := dqa.Schedule(ctx, "s", "@every 1s", "v", delayed.WithMissedTicks(policy)); err != nil {
		t.Fatal(err)
	}
	got := receiveTicks(ctx, t, qa, 15*time.Second, func(ds []*blocking.Delivery[string]) bool { return len(ds) >= 2 })
	_ = dqa.Close()
	_ = qa.Close()
	// The outage: until at least two ticks that A did not materialize
	// have passed (read again after: a call of A's still in flight when
	// it closed may have materialized more).
	var firstMissed time.Time
	for next := int64(-1); ; {
		raw, err := rdb.HGet(ctx, k.Schedules, "s").Result()
		if err != nil {
			t.Fatal(err)
		}
		rec, err := schedule.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Next == next {
			break
		}
		next, firstMissed = rec.Next, time.UnixMilli(rec.Next)
		redistest.WaitFor(t, 30*time.Second, "two ticks past with no process", func() bool {
			now, err := rdb.Time(ctx).Result()
			return err == nil && now.After(firstMissed.Add(1500*time.Millisecond))
		})
	}
	// Process B starts.
	started, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	qb, _ := open[string](t, redistest.NewClientLike(t, rdb), name)
	got = append(got, receiveTicks(ctx, t, qb, 15*time.Second, func(ds []*blocking.Delivery[string]) bool {
		after := 0
		for _, d := range ds {
			if !d.EnqueuedAt.Before(started) && d.DueAt.After(d.EnqueuedAt.Add(time.Second)) {
				after++
			}
		}
		return after >= 2
	})...)

	seen := map[int64]bool{} // due times, Unix ms
	var missed []time.Time   // ticks B materialized after their time
	for _, d := range got {
		if seen[d.DueAt.UnixMilli()] {
			t.Errorf("tick %s fired twice", d.ID)
		}
		seen[d.DueAt.UnixMilli()] = true
		if !d.EnqueuedAt.Before(started) && d.DueAt.Before(d.EnqueuedAt) {
			missed = append(missed, d.DueAt)
		}
	}
	slices.SortFunc(missed, time.Time.Compare)
	dues := slices.Sorted(maps.Keys(seen))
	var gaps []time.Time // ticks that never fired
	for i := 1; i < len(dues); i++ {
		for g := dues[i-1] + 1000; g < dues[i]; g += 1000 {
			gaps = append(gaps, time.UnixMilli(g))
		}
	}
	t.Logf("missed from %v: fired %v, never fired %v", firstMissed, missed, gaps)
	switch policy {
	case delayed.MissedAll:
		if len(gaps) > 0 || len(missed) < 2 || !missed[0].Equal(firstMissed) {
			t.Errorf("MissedAll: fired %v, never fired %v; want every tick from %v", missed, gaps, firstMissed)
		}
	case delayed.MissedLatest:
		if len(missed) != 1 || len(gaps) < 1 || !gaps[0].Equal(firstMissed) || !gaps[len(gaps)-1].Before(missed[0]) {
			t.Errorf("MissedLatest: fired %v, never fired %v; want the latest tick from %v only", missed, gaps, firstMissed)
		}
	case delayed.MissedSkip:
		if len(missed) != 0 || len(gaps) < 2 || !gaps[0].Equal(firstMissed) {
			t.Errorf("MissedSkip: fired %v, never fired %v; want none from %v", missed, gaps, firstMissed)
		}
	}
}
