package delayed_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use, whatever the machine has

	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// A schedule with no zone is in UTC (the default WithTimeZone documents)
// whatever the zone of the process: every process plans the same ticks.
// The process's zone is set before it starts, so the test runs itself
// again with TZ=America/New_York. Before the fix, "0 3 * * *" fired at
// 03:00 New York time (08:00 UTC in winter) in that process.
func TestScheduleDefaultZoneIsUTC(t *testing.T) {
	if os.Getenv("REDELAY_TZ_CHILD") == "" {
		cmd := redistest.Rerun(context.Background(), "TestScheduleDefaultZoneIsUTC", "REDELAY_TZ_CHILD=1", "TZ=America/New_York")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("with TZ=America/New_York: %v\n%s", err, out)
		}
		return
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	// Otherwise the test proves nothing.
	for _, at := range []time.Time{time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC), time.Date(2026, 7, 15, 12, 0, 0, 0, time.UTC)} {
		local, localOff := at.In(time.Local).Zone()
		want, wantOff := at.In(ny).Zone()
		if local != want || localOff != wantOff {
			t.Fatalf("time.Local is not America/New_York: at %v it is %s (%+ds), want %s (%+ds)", at, local, localOff, want, wantOff)
		}
	}

	mr, rdb := redistest.Miniredis(t)
	// The server's clock: 02:59:59 UTC on a winter day, 21:59:59 the day
	// before in New York.
	t0 := time.Date(2026, 1, 15, 2, 59, 59, 0, time.UTC)
	mr.SetTime(t0)
	ctx := context.Background()
	name := "tzchild"
	_, dq := open[string](t, rdb, name, delayed.WithoutTransfer())
	if err := dq.Schedule(ctx, "none", "0 3 * * *", "v"); err != nil {
		t.Fatal(err)
	}
	if err := dq.Schedule(ctx, "utc", "0 3 * * *", "v", delayed.WithTimeZone(time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := dq.Schedule(ctx, "ny", "0 3 * * *", "v", delayed.WithTimeZone(ny)); err != nil {
		t.Fatal(err)
	}
	next := func() map[string]time.Time {
		t.Helper()
		infos, err := dq.Schedules(ctx)
		if err != nil || len(infos) != 3 {
			t.Fatalf("Schedules = %+v, %v", infos, err)
		}
		m := map[string]time.Time{}
		for _, in := range infos {
			m[in.Name] = in.Next
		}
		return m
	}
	check := func(when string, got map[string]time.Time, want map[string]time.Time) {
		t.Helper()
		for n, w := range want {
			if !got[n].Equal(w) {
				t.Errorf("%s: schedule %q: next %v (%v), want %v", when, n, got[n].UTC(), got[n].In(ny), w)
			}
		}
	}
	check("scheduled", next(), map[string]time.Time{
		"none": time.Date(2026, 1, 15, 3, 0, 0, 0, time.UTC),
		"utc":  time.Date(2026, 1, 15, 3, 0, 0, 0, time.UTC),
		"ny":   time.Date(2026, 1, 15, 3, 0, 0, 0, ny),
	})

	// The transfer plans the ticks after those in the same zones.
	target := mover.Target{Queue: store.New(rdb).Partition(redistest.KeysOf(name))}
	pending := func() []string {
		t.Helper()
		items, err := dq.List(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if err := mover.RunOnce(ctx, target); err != nil {
		t.Fatal(err)
	}
	if ids, want := pending(), []string{"none@2026-01-15T03:00:00.000Z", "utc@2026-01-15T03:00:00.000Z"}; !slices.Equal(ids, want) {
		t.Errorf("materialized at %v: %v, want %v", t0, ids, want)
	}
	mr.SetTime(time.Date(2026, 1, 15, 7, 59, 59, 0, time.UTC)) // 02:59:59 in New York
	if err := mover.RunOnce(ctx, target); err != nil {
		t.Fatal(err)
	}
	// The 03:00 UTC ticks are due and have moved on to the ready list.
	if ids, want := pending(), []string{"ny@2026-01-15T08:00:00.000Z"}; !slices.Equal(ids, want) {
		t.Errorf("pending at 07:59:59 UTC: %v, want %v", ids, want)
	}
	check("advanced", next(), map[string]time.Time{
		"none": time.Date(2026, 1, 16, 3, 0, 0, 0, time.UTC),
		"utc":  time.Date(2026, 1, 16, 3, 0, 0, 0, time.UTC),
		"ny":   time.Date(2026, 1, 16, 3, 0, 0, 0, ny),
	})
}
