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
		_, r2, _ := r.Advance(s, time.UnixMilli(r.Next).Add(-Lead))
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
