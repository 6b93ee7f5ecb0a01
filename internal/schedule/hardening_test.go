package schedule

// Tests of the schedule defects of the second attack round (B5, B8, B10 in
// docs/hardening.md; each failed on the code before its fix).

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones the tests use, whatever the machine has

	"github.com/robfig/cron/v3"
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
// refused with ErrSpec (before: the cron parser panicked with "slice
// bounds out of range [:-1]", in the caller's goroutine or the transfer's).
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
// as in WithTimeZone (before: "CRON_TZ=Local" was accepted and each
// process planned the schedule in its own zone).
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
