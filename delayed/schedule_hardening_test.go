package delayed_test

// Tests of the schedule defects of the second attack round (B5 to B10 in
// docs/hardening.md; each failed on the code before its fix), and of the
// missed-tick policies through Schedule with real processes.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use, whatever the machine has

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
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
