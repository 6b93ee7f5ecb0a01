package schedule

// Tests of the schedule defects of the second attack round (B5, B8, B10 in
// docs/hardening.md; each failed on the code before its fix).

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use, whatever the machine has

	"github.com/robfig/cron/v3"
	"pgregory.net/rapid"
)

// parseNoPanic is Parse, with a panic reported as the error.
func parseNoPanic(spec string, loc *time.Location) (s cron.Schedule, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panicked: %v", p)
		}
	}()
	return Parse(spec, loc)
}

// A spec that names a zone and nothing else, or a zone and a tab, is
// refused with ErrSpec before the cron parser sees it: the parser panics
// on it ("slice bounds out of range [:-1]"), in the caller's goroutine or
// the transfer's (docs/hardening.md, B5).
func TestParseZoneOnlySpec(t *testing.T) {
	for _, spec := range []string{
		"CRON_TZ=UTC", "TZ=", "CRON_TZ=Europe/Berlin", "CRON_TZ= ", "CRON_TZ=", "TZ=UTC",
		"CRON_TZ=UTC\t", " TZ=Asia/Tokyo  ", "CRON_TZ= 0 3 * * *",
	} {
		if _, err := parseNoPanic(spec, nil); !errors.Is(err, ErrSpec) {
			t.Errorf("Parse(%q) = %v, want ErrSpec", spec, err)
		}
		if _, err := func() (s cron.Schedule, err error) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("panicked: %v", p)
				}
			}()
			return Record{Spec: spec}.Parsed()
		}(); !errors.Is(err, ErrSpec) {
			t.Errorf("a stored record with spec %q: %v, want ErrSpec", spec, err)
		}
	}
	// A zone and a spec, whatever whitespace separates them, still parse.
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	from := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC) // 09:00 in Tokyo
	for _, spec := range []string{"CRON_TZ=Asia/Tokyo 0 10 * * *", "TZ=Asia/Tokyo\t0 10 * * *", "CRON_TZ=Asia/Tokyo   0 10 * * *"} {
		s, err := parseNoPanic(spec, nil)
		if err != nil {
			t.Errorf("Parse(%q) = %v", spec, err)
			continue
		}
		if n := s.Next(from); !n.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, tokyo)) {
			t.Errorf("Parse(%q).Next = %v", spec, n.In(tokyo))
		}
	}
}

// The process's own zone, by any name that loads it, is refused in a spec
// as in WithTimeZone: each process would plan the schedule in its own
// zone (docs/hardening.md, B8).
func TestParseLocalZoneRefused(t *testing.T) {
	for _, spec := range []string{"CRON_TZ=Local 0 3 * * *", "TZ=Local 0 3 * * *", "CRON_TZ=localtime 0 3 * * *", "TZ=Local @daily"} {
		if _, err := parseNoPanic(spec, nil); !errors.Is(err, ErrSpec) {
			t.Errorf("Parse(%q) = %v, want ErrSpec", spec, err)
		}
	}
	if _, err := (Record{Spec: "0 3 * * *", Zone: "Local"}).Parsed(); !errors.Is(err, ErrSpec) {
		t.Errorf("a stored record with zone Local: %v, want ErrSpec", err)
	}
}

// ZoneName stores a location by its name only when the zone of that name
// is the location: a time.FixedZone named after a zone with another
// offset, or with daylight saving, is refused, and so is the process's
// own zone (B7 in docs/hardening.md; the test that failed before the fix
// is delayed's TestScheduleFixedZoneRefused).
func TestZoneName(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	kathmandu, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		loc  *time.Location
		want string // "" refused
	}{
		{berlin, "Europe/Berlin"},
		{kathmandu, "Asia/Kathmandu"},
		{time.UTC, "UTC"},
		{time.FixedZone("UTC", 0), "UTC"},
		{time.FixedZone("Asia/Kathmandu", 5*3600+45*60), "Asia/Kathmandu"}, // the same offset all the while
		{time.FixedZone("UTC", 5*3600), ""},
		{time.FixedZone("Europe/Berlin", -7*3600), ""},
		{time.FixedZone("Europe/Berlin", 3600), ""}, // Berlin's offset in winter only
		{time.FixedZone("UTC+1", 3600), ""},         // no zone of that name
		{time.FixedZone("", 3600), ""},
		{time.Local, ""},
	} {
		got, err := ZoneName(tc.loc, now)
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("ZoneName(%q, offset %s) = %q, %v; want %q", tc.loc, offset(func() int { _, o := now.In(tc.loc).Zone(); return o }()), got, err, tc.want)
		}
	}
	// Berlin in summer, a fixed zone with Berlin's winter offset: the
	// error says when they differ.
	if _, err := ZoneName(time.FixedZone("Europe/Berlin", 3600), now); err == nil || !strings.Contains(err.Error(), "UTC+02:00") {
		t.Errorf("error = %v, want the instant and the offsets", err)
	}
}

// countNext counts the calls of a schedule's Next.
type countNext struct {
	cron.Schedule
	n int
}

func (c *countNext) Next(t time.Time) time.Time {
	c.n++
	return c.Schedule.Next(t)
}

// After an outage of any length, the latest missed tick is the latest
// before now, and MissedAll fires the last MaxAll of them: the plan
// searches back from now rather than walking every tick since the stored
// one, which a bound on the walk would stop short of now
// (docs/hardening.md, B10).
func TestPlanLongOutage(t *testing.T) {
	every, err := Parse("@every 1s", nil)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := Parse("* * * * * *", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		s    cron.Schedule
		down time.Duration
	}{
		{"@every 1s, 48 h", every, 48 * time.Hour},
		{"@every 1s, 250 years", every, 250 * 365 * 24 * time.Hour},
		{"every second, 48 h", secs, 48 * time.Hour},
		{"every second, 3 years", secs, 3 * 365 * 24 * time.Hour},
	} {
		next, now := base, base.Add(tc.down).Add(500*time.Millisecond)
		latest := base.Add(tc.down) // the latest tick before now
		upcoming := []time.Time{latest.Add(time.Second), latest.Add(2 * time.Second)}
		for _, p := range []Missed{MissedLatest, MissedAll, MissedSkip} {
			var want []time.Time
			switch p {
			case MissedLatest:
				want = []time.Time{latest}
			case MissedAll:
				for i := MaxAll - 1; i >= 0; i-- {
					want = append(want, latest.Add(-time.Duration(i)*time.Second))
				}
			}
			want = append(want, upcoming...)
			got, newNext := Plan(tc.s, next, now, p)
			if !slices.EqualFunc(got, want, time.Time.Equal) || !newNext.Equal(latest.Add(3*time.Second)) {
				first := "none"
				if len(got) > 0 {
					first = fmt.Sprintf("%v (%v before now)", got[0], now.Sub(got[0]))
				}
				t.Errorf("%s, %s: %d ticks, the first %s, next %v; want %d from %v, next %v",
					tc.name, p, len(got), first, newNext, len(want), want[0], latest.Add(3*time.Second))
			}
		}
	}
	// It stays cheap: no walk over every missed tick.
	for _, p := range []Missed{MissedLatest, MissedAll, MissedSkip} {
		c := &countNext{Schedule: secs}
		Plan(c, base, base.Add(48*time.Hour), p)
		if c.n > 2000 {
			t.Errorf("%s after 48 h: %d calls of Next for 172,800 missed ticks", p, c.n)
		}
	}
}

// walk plans by walking every tick: the reference for Plan. It returns
// the missed ticks, the ticks ahead, and the new next.
func walk(s cron.Schedule, next, now time.Time) (missed, ahead []time.Time, newNext time.Time) {
	t := next
	for ; !t.IsZero() && !t.After(now.Add(Lead)); t = s.Next(t) {
		if t.Before(now) {
			missed = append(missed, t)
		} else {
			ahead = append(ahead, t)
		}
	}
	return missed, ahead, t
}

// keep is what policy keeps of the missed ticks.
func keep(missed []time.Time, policy Missed) []time.Time {
	switch policy {
	case MissedSkip:
		return nil
	case MissedAll:
		return missed[max(0, len(missed)-MaxAll):]
	}
	return missed[max(0, len(missed)-1):]
}

// Plan agrees with a walk over every tick, for cron specs in zones with
// daylight saving, @every, and a next tick that is not on the spec's grid
// (planned in another zone).
func TestPlanMatchesWalk(t *testing.T) {
	specs := []struct {
		spec string
		span time.Duration // outages up to this long (the walk stays short)
	}{
		{"@every 1s", time.Hour},
		{"@every 7s", 3 * time.Hour},
		{"@every 90m", 2000 * time.Hour},
		{"* * * * * *", time.Hour},
		{"*/7 * * * * *", 3 * time.Hour},
		{"30 1 * * *", 3 * 365 * 24 * time.Hour},
		{"30 2 * * *", 3 * 365 * 24 * time.Hour},
		{"0 9 * * 1-5", 3 * 365 * 24 * time.Hour},
		{"0 0 29 2 *", 12 * 365 * 24 * time.Hour},
		{"*/15 9-10 * * 1", 2 * 365 * 24 * time.Hour},
	}
	zones := []string{"UTC", "America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kathmandu"}
	check := func(t interface{ Fatalf(string, ...any) }, spec, zone string, start time.Time, offGrid, outage time.Duration) {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatalf("%v", err)
		}
		s, err := Parse(spec, loc)
		if err != nil {
			t.Fatalf("%v", err)
		}
		next := s.Next(start).Add(-offGrid)
		now := next.Add(outage)
		missed, ahead, wantNext := walk(s, next, now)
		for _, p := range []Missed{MissedLatest, MissedAll, MissedSkip} {
			got, gotNext := Plan(s, next, now, p)
			want := append(slices.Clone(keep(missed, p)), ahead...)
			if !slices.EqualFunc(got, want, time.Time.Equal) || !gotNext.Equal(wantNext) {
				t.Fatalf("%q in %v, next %v, now %v, %s: Plan = %v, next %v; walk = %v, next %v",
					spec, zone, next, now, p, got, gotNext, want, wantNext)
			}
		}
	}
	// Outages spread evenly over each spec's span (rapid, below, favours
	// short ones).
	r := rand.New(rand.NewPCG(25, 10))
	for range 120 {
		sp := specs[r.IntN(len(specs))]
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(int64(4 * 365 * 24 * time.Hour))))
		check(t, sp.spec, zones[r.IntN(len(zones))], start, time.Duration(r.IntN(2))*time.Duration(r.IntN(3600))*time.Second, time.Duration(r.Int64N(int64(sp.span))))
	}
	rapid.Check(t, func(t *rapid.T) {
		sp := rapid.SampledFrom(specs).Draw(t, "spec")
		zone := rapid.SampledFrom(zones).Draw(t, "zone")
		start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rapid.Int64Range(0, int64(4*365*24*time.Hour/time.Millisecond)).Draw(t, "start ms")) * time.Millisecond)
		var off time.Duration
		if rapid.Bool().Draw(t, "off the grid") {
			off = time.Duration(rapid.Int64Range(1, 3600).Draw(t, "off s")) * time.Second
		}
		outage := time.Duration(rapid.Int64Range(-int64(3*time.Second/time.Millisecond), int64(sp.span/time.Millisecond)).Draw(t, "outage ms")) * time.Millisecond
		check(t, sp.spec, zone, start, off, outage)
	})
}
