// Package schedule holds what recurring schedules compute in Go: parsing a
// spec (with github.com/robfig/cron/v3) and planning which ticks to
// materialize as delayed items. Redis holds each schedule's state; the
// scripts schedule_*.lua change it atomically (see docs/decisions.md).
package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"

	"github.com/redelay/redelay/internal/keys"
)

// Lead is how long before its time a tick is materialized as a delayed
// item: from then on it fires as precisely as any delayed item. It is
// longer than a transfer's sweep interval (1 s by default), so a process
// that learns of a schedule on its sweep is still in time.
const Lead = 2 * time.Second

// maxAhead bounds the ticks one plan materializes ahead of now (at most
// 3 fit in the lead, cron's resolution being a second): a guard, never
// reached.
const maxAhead = 16

// MaxAll bounds how many missed ticks MissedAll fires: the latest ones.
const MaxAll = 100

// Missed is what happens to ticks whose time passed while no process ran.
type Missed string

// Missed-tick policies.
const (
	MissedLatest Missed = "latest" // fire the latest missed tick once, skip older ones
	MissedSkip   Missed = "skip"   // fire none of them
	MissedAll    Missed = "all"    // fire each (the latest MaxAll)
)

// ErrSpec wraps a spec that cannot be parsed.
var ErrSpec = errors.New("bad schedule spec")

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor) //nolint:gochecknoglobals // immutable

// Parse parses spec: five fields (minute to weekday), or six with seconds
// first; a descriptor (@every 90s, @hourly, @daily, @weekly, @monthly,
// @yearly); a CRON_TZ= or TZ= prefix names its time zone, else loc (UTC
// when nil). The prefix's zone must load with time.LoadLocation and must
// not be the process's own (Local, localtime).
//
// The zone is always named to the parser: without one, robfig/cron reads
// the spec in the zone of the time given to Next, and the times this
// package and its callers hand it (time.UnixMilli, the server's TIME) are
// in the process's local zone, so processes in different zones would plan
// different ticks for one schedule. The prefix is split here, not by the
// parser, which panics on a prefix with nothing after it; a panic of the
// parser is returned as an error all the same.
func Parse(spec string, loc *time.Location) (sched cron.Schedule, err error) {
	s := strings.TrimSpace(spec)
	if s == "" {
		return nil, fmt.Errorf("%w: empty", ErrSpec)
	}
	zone := "UTC"
	if loc != nil {
		zone = loc.String()
	}
	if name, rest, ok := splitZone(s); ok {
		if rest == "" {
			return nil, fmt.Errorf("%w: %q names a time zone and no schedule", ErrSpec, spec)
		}
		if _, err := LoadZone(name); err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrSpec, spec, err)
		}
		zone, s = name, rest
	}
	if !strings.HasPrefix(s, "@every") { // @every has no zone
		s = "CRON_TZ=" + zone + " " + s
	}
	defer func() {
		if p := recover(); p != nil {
			sched, err = nil, fmt.Errorf("%w: %q: the cron parser failed: %v", ErrSpec, spec, p)
		}
	}()
	sched, err = parser.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrSpec, spec, err)
	}
	if sched.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%w: %q never fires", ErrSpec, spec)
	}
	return sched, nil
}

// splitZone splits a trimmed spec that starts with a CRON_TZ= or TZ=
// prefix into the zone it names and the rest, trimmed; ok is false when
// there is no such prefix. The zone ends at any whitespace.
func splitZone(s string) (zone, rest string, ok bool) {
	for _, p := range []string{"CRON_TZ=", "TZ="} {
		if name, found := strings.CutPrefix(s, p); found {
			if i := strings.IndexFunc(name, unicode.IsSpace); i >= 0 {
				return name[:i], strings.TrimSpace(name[i:]), true
			}
			return name, "", true
		}
	}
	return "", "", false
}

// LoadZone loads the time zone called name, as every process must read it
// the same: an IANA name, not empty, and not the process's own zone
// ("Local", or "localtime", which some systems' zone databases link to
// it).
func LoadZone(name string) (*time.Location, error) {
	switch {
	case name == "":
		return nil, errors.New("empty time zone")
	case strings.EqualFold(name, "Local"), strings.EqualFold(name, "localtime"):
		return nil, fmt.Errorf("time zone %q is each process's own: name one, such as \"Europe/Berlin\"", name)
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: %w", name, err)
	}
	return loc, nil
}

// How far from now ZoneName compares a location with the zone of its
// name: back for missed ticks, ahead for the ticks to come.
const (
	zoneCheckBack  = 366 * 24 * time.Hour
	zoneCheckAhead = 10 * 366 * 24 * time.Hour
)

// ZoneName returns the name a schedule's zone is stored by, which every
// process loads with time.LoadLocation: loc's own, when the zone of that
// name has loc's offset at every instant from a year before now to ten
// years after. So a location from time.LoadLocation is accepted, and so is
// a time.FixedZone named after a zone that has that offset all the while
// (time.FixedZone("UTC", 0)); one whose name is another zone's
// (time.FixedZone("UTC", 5*3600), a fixed "Europe/Berlin", which has no
// daylight saving) is refused, as is the process's own zone (time.Local).
func ZoneName(loc *time.Location, now time.Time) (string, error) {
	name := loc.String()
	named, err := LoadZone(name)
	if err != nil {
		return "", err
	}
	from, to := now.Add(-zoneCheckBack), now.Add(zoneCheckAhead)
	for t, i := from, 0; t.Before(to) && i < 1000; i++ {
		a, b := t.In(loc), t.In(named)
		_, offA := a.Zone()
		_, offB := b.Zone()
		if offA != offB {
			return "", fmt.Errorf("time zone %q is not the zone of that name (a time.FixedZone?): at %v it is %s, and %q is %s",
				name, t.UTC().Format(time.RFC3339), offset(offA), name, offset(offB))
		}
		// On to the next change of either.
		_, endA := a.ZoneBounds()
		_, endB := b.ZoneBounds()
		next := endA
		if next.IsZero() || !endB.IsZero() && endB.Before(next) {
			next = endB
		}
		if next.IsZero() || !next.After(t) {
			break
		}
		t = next
	}
	return name, nil
}

// offset formats a zone offset in seconds east of UTC as UTC±hh:mm.
func offset(sec int) string {
	sign := "+"
	if sec < 0 {
		sign, sec = "-", -sec
	}
	return fmt.Sprintf("UTC%s%02d:%02d", sign, sec/3600, sec%3600/60)
}

// Plan returns the ticks to materialize now: those from next (the first
// tick not yet materialized; inclusive) up to now+Lead, with the ticks
// whose time has passed kept as policy says; and the first tick after
// them, the new next. A running process materializes each tick Lead
// before its time, so a tick found past was missed: no process ran (or
// none could reach Redis) for at least Lead.
//
// The missed ticks are found back from now (see latestBefore), so a plan
// costs the same after an outage of any length.
func Plan(s cron.Schedule, next, now time.Time, policy Missed) (ticks []time.Time, newNext time.Time) {
	t := next
	if !t.IsZero() && t.Before(now) {
		keep := 0
		switch policy {
		case MissedSkip:
		case MissedAll:
			keep = MaxAll
		default:
			keep = 1
		}
		last := latestBefore(s, next, now)
		for l := last; len(ticks) < keep && !l.IsZero(); l = latestBefore(s, next, l) {
			ticks = append(ticks, l)
		}
		slices.Reverse(ticks)
		t = s.Next(last)
	}
	for range maxAhead {
		if t.IsZero() || t.After(now.Add(Lead)) {
			break
		}
		ticks = append(ticks, t)
		t = s.Next(t)
	}
	return ticks, t
}

// latestBefore returns the latest tick before end of the ticks that start
// at from (from itself, then s.Next of each); zero when from is not before
// end. It does not walk the ticks in between. An @every schedule's ticks
// after the first are a whole number of steps apart: counted. A cron
// schedule's ticks after from are the instants its fields match, on whole
// seconds, whatever the tick before: searched back from end, in windows
// that double until one holds a tick, then by halving that window down to
// a second, about 2·log2((end−tick)/1s) calls of s.Next.
func latestBefore(s cron.Schedule, from, end time.Time) time.Time {
	if !from.Before(end) {
		return time.Time{}
	}
	first := s.Next(from)
	if first.IsZero() || !first.Before(end) {
		return from
	}
	if every, ok := s.(cron.ConstantDelaySchedule); ok {
		// first is on a whole second (Next truncates), and the ticks
		// after it are first + k·step: the largest k whose tick is
		// before end.
		step := int64(every.Delay / time.Second)
		last := end.Unix()
		if end.Nanosecond() == 0 {
			last--
		}
		k := (last - first.Unix()) / step
		return time.Unix(first.Unix()+k*step, 0).In(first.Location())
	}
	// A tick in (x, end) for x = lo; none for x = hi.
	hasTick := func(x time.Time) bool {
		n := s.Next(x)
		return !n.IsZero() && n.Before(end)
	}
	lo, hi := from, end
	for w := time.Second; ; w *= 2 {
		x := end.Add(-w)
		if !x.After(from) || w > 1<<61 {
			break
		}
		if hasTick(x) {
			lo = x
			break
		}
		hi = x
	}
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if hasTick(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// The ticks in (lo, end) lie in (lo, hi], under a second: one.
	return s.Next(lo)
}

// TickID is the ID of the item of schedule name's tick at t: stable, so
// that consumers can deduplicate, and readable. On a partitioned queue,
// IDs of this shape route to partition 0 (keys.IsTickID).
func TickID(name string, t time.Time) string {
	return name + "@" + t.UTC().Format(keys.TickIDLayout)
}

// Record is a schedule's state as stored in Redis (JSON). Next is the
// first tick not yet materialized; Recent the latest ticks materialized
// (some may still be ahead, by at most Lead).
type Record struct {
	Spec   string  `json:"spec"`
	Zone   string  `json:"tz,omitempty"` // time zone given as an option
	Missed Missed  `json:"missed"`
	Next   int64   `json:"next"`             // Unix ms
	Recent []int64 `json:"recent,omitempty"` // Unix ms, oldest first
}

// keepRecent bounds Record.Recent.
const keepRecent = 8

// Decode reads a stored record.
func Decode(s string) (Record, error) {
	var r Record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return r, fmt.Errorf("schedule record: %w", err)
	}
	return r, nil
}

// Encode writes r for storing.
func (r Record) Encode() string {
	b, _ := json.Marshal(r) // plain fields: never fails
	return string(b)
}

// Location is the record's time zone option (nil: none, which Parse
// reads as UTC).
func (r Record) Location() (*time.Location, error) {
	if r.Zone == "" {
		return nil, nil
	}
	return LoadZone(r.Zone)
}

// TickZone names the time zone the record's ticks are planned in: the
// spec's CRON_TZ= or TZ= prefix, else the zone option, else UTC.
func (r Record) TickZone() string {
	if zone, _, ok := splitZone(strings.TrimSpace(r.Spec)); ok {
		return zone
	}
	if r.Zone != "" {
		return r.Zone
	}
	return "UTC"
}

// Policy is the record's missed-tick policy: MissedLatest for a record
// that names none or one this release does not know, as Advance reads it.
func (r Record) Policy() Missed {
	switch r.Missed {
	case MissedSkip, MissedAll:
		return r.Missed
	}
	return MissedLatest
}

// OverdueAfter is how long after its time a tick that no process has
// materialized counts as overdue: a running process materializes each tick
// Lead before its time, so one this late means no process transfers the
// queue (or none reaches Redis).
const OverdueAfter = 10 * time.Second

// Parsed parses the record's spec.
func (r Record) Parsed() (cron.Schedule, error) {
	loc, err := r.Location()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return Parse(r.Spec, loc)
}

// Advance plans the ticks to materialize at now and returns them with the
// record that follows and when its next tick must be materialized (ms).
// It fails (ErrSpec) when the schedule has no tick after them, or when
// planning panics: a record read from Redis never stops its reader.
func (r Record) Advance(s cron.Schedule, now time.Time) (ticks []time.Time, next Record, dueMs int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			ticks, next, dueMs, err = nil, r, 0, fmt.Errorf("%w: %q: planning failed: %v", ErrSpec, r.Spec, p)
		}
	}()
	ticks, n := Plan(s, time.UnixMilli(r.Next), now, r.Missed)
	if n.IsZero() {
		return nil, r, 0, fmt.Errorf("%w: %q has no tick after %v", ErrSpec, r.Spec, time.UnixMilli(r.Next).UTC())
	}
	next = r
	next.Next = n.UnixMilli()
	next.Recent = append([]int64(nil), r.Recent...)
	for _, t := range ticks {
		next.Recent = append(next.Recent, t.UnixMilli())
	}
	if len(next.Recent) > keepRecent {
		next.Recent = next.Recent[len(next.Recent)-keepRecent:]
	}
	return ticks, next, DueMs(n), nil
}

// DueMs is when a schedule whose next tick is at next must materialize
// it: Lead before.
func DueMs(next time.Time) int64 { return next.Add(-Lead).UnixMilli() }

// Last is the latest tick materialized whose time has come (zero if none).
func (r Record) Last(now time.Time) time.Time {
	var last time.Time
	for _, ms := range r.Recent {
		if t := time.UnixMilli(ms); !t.After(now) && t.After(last) {
			last = t
		}
	}
	return last
}

// Pending returns the ticks r materialized that may still be pending at
// now: those ahead of now.
func (r Record) Pending(now time.Time) []time.Time {
	var out []time.Time
	for _, ms := range r.Recent {
		if t := time.UnixMilli(ms); t.After(now.Add(-Lead)) {
			out = append(out, t)
		}
	}
	return out
}

// NextTick is the schedule's next tick after now: the earliest
// materialized one still ahead, else the first not yet materialized.
func (r Record) NextTick(now time.Time) time.Time {
	next := time.UnixMilli(r.Next)
	for _, t := range r.Pending(now) {
		if t.After(now) && t.Before(next) {
			next = t
		}
	}
	return next
}
