package schedule

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use, whatever the machine has

	"github.com/redelay/redelay/internal/keys"
)

func mustParse(t *testing.T, spec string) interface{ Next(time.Time) time.Time } {
	t.Helper()
	s, err := Parse(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPlan(t *testing.T) {
	s, err := Parse("@every 1s", nil)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return base.Add(time.Duration(sec) * time.Second) }
	for _, tc := range []struct {
		name     string
		next     time.Time
		now      time.Time
		policy   Missed
		want     []time.Time
		wantNext time.Time
	}{
		{"on time: ticks within the lead", at(10), at(8).Add(500 * time.Millisecond), MissedLatest, []time.Time{at(10)}, at(11)},
		{"nothing yet", at(10), at(7), MissedLatest, nil, at(10)},
		{"missed, latest", at(0), at(6).Add(500 * time.Millisecond), MissedLatest, []time.Time{at(6), at(7), at(8)}, at(9)},
		{"missed, skip", at(0), at(6).Add(500 * time.Millisecond), MissedSkip, []time.Time{at(7), at(8)}, at(9)},
		{"missed, all", at(0), at(3).Add(500 * time.Millisecond), MissedAll, []time.Time{at(0), at(1), at(2), at(3), at(4), at(5)}, at(6)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, next := Plan(s, tc.next, tc.now, tc.policy)
			if !slices.EqualFunc(got, tc.want, time.Time.Equal) || !next.Equal(tc.wantNext) {
				t.Errorf("Plan = %v, next %v; want %v, next %v", got, next, tc.want, tc.wantNext)
			}
		})
	}
	// MissedAll keeps the latest MaxAll.
	got, _ := Plan(s, at(0), at(1000), MissedAll)
	if len(got) != MaxAll+3 || !got[0].Equal(at(1000-MaxAll)) {
		t.Errorf("MissedAll after 1000 missed: %d ticks from %v", len(got), got[0])
	}
}

func TestParse(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("0 3 * * *", ny)
	if err != nil {
		t.Fatal(err)
	}
	n := s.Next(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if want := time.Date(2026, 12, 1, 3, 0, 0, 0, ny); !n.Equal(want) {
		t.Errorf("next = %v, want %v", n, want)
	}
	if n := mustParse(t, "*/15 * * * * *").Next(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC)); n.Second() != 15 {
		t.Errorf("seconds field: next %v", n)
	}
	for _, bad := range []string{"", "nope", "* * *", "0 0 30 2 *"} {
		if _, err := Parse(bad, nil); !errors.Is(err, ErrSpec) {
			t.Errorf("Parse(%q) = %v, want ErrSpec", bad, err)
		}
	}
}

func TestRecord(t *testing.T) {
	r := Record{Spec: "@every 1s", Missed: MissedLatest, Next: 5000, Recent: []int64{1000, 2000, 3000, 4000}}
	got, err := Decode(r.Encode())
	if err != nil || got.Spec != r.Spec || got.Next != r.Next || !slices.Equal(got.Recent, r.Recent) {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
	now := time.UnixMilli(3500)
	if last := r.Last(now); !last.Equal(time.UnixMilli(3000)) {
		t.Errorf("Last = %v", last)
	}
	if p := r.Pending(now); len(p) != 3 {
		t.Errorf("Pending = %v, want the ticks after now-Lead", p)
	}
	s, _ := Parse(r.Spec, nil)
	for range 20 {
		_, r2, _, err := r.Advance(s, time.UnixMilli(r.Next).Add(-Lead))
		if err != nil {
			t.Fatal(err)
		}
		r = r2
	}
	if len(r.Recent) > keepRecent {
		t.Errorf("Recent grew to %d", len(r.Recent))
	}
}

// TestTickIDRoutes: every tick ID is recognized as one, so that a
// partitioned queue looks for it in partition 0, where it is materialized.
func TestTickIDRoutes(t *testing.T) {
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	for _, name := range []string{"s", "a@b", "nightly report ✓", strings.Repeat("x", 200)} {
		for _, at := range []time.Time{
			time.Date(2026, 12, 1, 20, 49, 49, 123456789, time.UTC),
			time.Date(2030, 2, 28, 3, 0, 0, 0, zone),
			time.UnixMilli(0),
		} {
			id := TickID(name, at)
			if !keys.IsTickID(id) || keys.PartitionOf(id, 16) != 0 {
				t.Errorf("TickID(%q, %v) = %q: not routed as a tick", name, at, id)
			}
		}
	}
}

// With no zone, a spec is read in UTC whatever the zone of the time
// handed to Next: the times the code hands it come from time.UnixMilli
// and the server's TIME, in the process's local zone, and every process
// must plan the same ticks.
func TestParseDefaultZoneIsUTC(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	from := []time.Time{
		time.Date(2026, 12, 1, 0, 0, 0, 0, time.FixedZone("EST", -5*3600)),  // 05:00 UTC
		time.Date(2026, 12, 1, 0, 0, 0, 0, time.FixedZone("UTC+9", 9*3600)), // 2026-11-30 15:00 UTC
		time.Date(2026, 12, 1, 0, 0, 0, 0, ny),                              // 05:00 UTC
		time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
	}
	want := []time.Time{
		time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC),
		time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC),
	}
	for _, spec := range []string{"0 3 * * *", "  0 0 3 * * *", "@daily"} {
		s, err := Parse(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range from {
			w := want[i]
			if spec == "@daily" {
				w = w.Add(-3 * time.Hour)
				if !w.After(f) {
					w = w.Add(24 * time.Hour)
				}
			}
			if n := s.Next(f); !n.Equal(w) {
				t.Errorf("Parse(%q, nil).Next(%v) = %v, want %v", spec, f, n.UTC(), w)
			}
		}
	}
	// A record stored without a zone is read the same way.
	s, err := Record{Spec: "0 3 * * *"}.Parsed()
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Next(from[0]); !n.Equal(want[0]) {
		t.Errorf("record without a zone: next %v, want %v", n.UTC(), want[0])
	}
	// A spec's own zone still wins (from[0] is 14:00 in Tokyo), and
	// @every has none.
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	for _, spec := range []string{"CRON_TZ=Asia/Tokyo 0 9 * * *", "TZ=Asia/Tokyo 0 9 * * *"} {
		s, err := Parse(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.Next(from[0]); !n.Equal(time.Date(2026, 12, 2, 9, 0, 0, 0, tokyo)) {
			t.Errorf("Parse(%q, nil).Next = %v", spec, n.In(tokyo))
		}
	}
	s, err = Parse("@every 90s", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := s.Next(from[0]); !n.Equal(from[0].Add(90 * time.Second)) {
		t.Errorf("@every 90s: next %v", n)
	}
}

// Daylight saving in a zone, as robfig/cron plans it (documented on
// delayed.WithTimeZone): a wall time that occurs twice on the fall-back
// day fires twice, one that does not occur on the spring-forward day is
// skipped that day.
func TestPlanDaylightSaving(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		spec string
		from time.Time
		want []time.Time
	}{
		{"30 1 * * *", time.Date(2026, 10, 31, 12, 0, 0, 0, ny), []time.Time{
			utc("2026-11-01T05:30:00Z"), // 01:30 EDT
			utc("2026-11-01T06:30:00Z"), // 01:30 EST, an hour later
			utc("2026-11-02T06:30:00Z"),
		}},
		{"30 2 * * *", time.Date(2027, 3, 13, 12, 0, 0, 0, ny), []time.Time{
			utc("2027-03-15T06:30:00Z"), // 02:30 does not exist on 2027-03-14
			utc("2027-03-16T06:30:00Z"),
		}},
	} {
		s, err := Parse(tc.spec, ny)
		if err != nil {
			t.Fatal(err)
		}
		var got []time.Time
		for n := s.Next(tc.from); len(got) < len(tc.want); n = s.Next(n) {
			got = append(got, n)
		}
		if !slices.EqualFunc(got, tc.want, time.Time.Equal) {
			t.Errorf("%q in New York from %v: %v, want %v", tc.spec, tc.from, got, tc.want)
		}
		// Plan, over the same days, materializes the same ticks.
		last := tc.want[len(tc.want)-1]
		ticks, _ := Plan(s, tc.want[0], last.Add(-Lead), MissedAll)
		if !slices.EqualFunc(ticks, tc.want, time.Time.Equal) {
			t.Errorf("%q: Plan = %v, want %v", tc.spec, ticks, tc.want)
		}
	}
}

// A record stored without a zone by a process in another zone keeps the
// next tick it planned (docs/decisions.md): that tick fires at its stored
// instant, and the ticks after it are planned in UTC.
func TestAdvanceRecordPlannedInAnotherZone(t *testing.T) {
	old := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC) // 03:00 in New York
	r := Record{Spec: "0 3 * * *", Missed: MissedLatest, Next: old.UnixMilli()}
	s, err := r.Parsed()
	if err != nil {
		t.Fatal(err)
	}
	est := time.FixedZone("EST", -5*3600)
	ticks, next, due, err := r.Advance(s, old.Add(-Lead).In(est))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	if !slices.EqualFunc(ticks, []time.Time{old}, time.Time.Equal) || next.Next != want.UnixMilli() || due != DueMs(want) {
		t.Errorf("Advance = %v, next %v, due %v; want [%v], next %v", ticks, time.UnixMilli(next.Next).UTC(), time.UnixMilli(due).UTC(), old, want)
	}
}

// A record names the zone its ticks are planned in (the spec's prefix
// first, then the option, then UTC) and its missed-tick policy (latest for
// one it does not know).
func TestRecordZoneAndPolicy(t *testing.T) {
	for _, c := range []struct {
		rec  Record
		zone string
		miss Missed
	}{
		{Record{Spec: "0 3 * * *"}, "UTC", MissedLatest},
		{Record{Spec: "0 3 * * *", Zone: "Europe/Berlin", Missed: MissedAll}, "Europe/Berlin", MissedAll},
		{Record{Spec: "CRON_TZ=Asia/Tokyo 0 3 * * *", Zone: "Europe/Berlin", Missed: MissedSkip}, "Asia/Tokyo", MissedSkip},
		{Record{Spec: "  TZ=America/New_York\t@daily", Missed: "later"}, "America/New_York", MissedLatest},
		{Record{Spec: "@every 1m", Missed: ""}, "UTC", MissedLatest},
	} {
		if got := c.rec.TickZone(); got != c.zone {
			t.Errorf("%+v: TickZone %q, want %q", c.rec, got, c.zone)
		}
		if got := c.rec.Policy(); got != c.miss {
			t.Errorf("%+v: Policy %q, want %q", c.rec, got, c.miss)
		}
	}
}
