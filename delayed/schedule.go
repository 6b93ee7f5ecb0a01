package delayed

import (
	"context"
	"time"

	"github.com/redelay/redelay/internal/queue"
	"github.com/redelay/redelay/internal/schedule"
)

// MaxScheduleNameLen bounds a schedule's name, in bytes (a tick's ID is
// the name, "@" and the tick's time).
const MaxScheduleNameLen = queue.MaxScheduleNameLen

// HeaderSchedule is the header a tick's item carries: the name of the
// schedule that made it.
const HeaderSchedule = queue.HeaderSchedule

// MissedTicks says what happens to the ticks of a schedule whose time
// passed while no process of the queue ran.
type MissedTicks string

// Policies for missed ticks.
const (
	// MissedLatest fires the latest missed tick once, at once, and skips
	// the older ones (the default): a nightly report that was missed runs
	// once when the service is back.
	MissedLatest MissedTicks = MissedTicks(schedule.MissedLatest)
	// MissedSkip fires none of them: the schedule goes on from the next
	// tick.
	MissedSkip MissedTicks = MissedTicks(schedule.MissedSkip)
	// MissedAll fires each missed tick, at once and in order; at most the
	// latest 100.
	MissedAll MissedTicks = MissedTicks(schedule.MissedAll)
)

// ScheduleOption configures one Schedule.
type ScheduleOption func(*scheduleOptions)

type scheduleOptions struct {
	loc    *time.Location
	missed MissedTicks
}

// WithTimeZone evaluates the spec in loc (default UTC, whatever the
// process's local zone): a location from time.LoadLocation with an IANA
// name, stored by that name so that every process reads the same zone.
// time.Local is refused with ErrInvalidArgument, and so is a
// time.FixedZone, unless the zone of its name has its offset at every
// instant from a year ago to ten years ahead (time.FixedZone("UTC", 0)):
// stored by name, it would be that zone. A spec that starts with CRON_TZ=
// names its own zone, which wins.
//
// In a zone with daylight saving, ticks follow robfig/cron: a wall time
// that occurs twice when the clocks go back fires twice, an hour apart,
// as two ticks with their own IDs (in America/New_York, "30 1 * * *"
// fires at 01:30 EDT and at 01:30 EST on 2026-11-01, 05:30 and 06:30
// UTC); a wall time that does not occur when the clocks go forward does
// not fire that day ("30 2 * * *" skips 2027-03-14 and fires next on
// 2027-03-15 at 02:30 EDT). UTC has neither.
func WithTimeZone(loc *time.Location) ScheduleOption {
	return func(o *scheduleOptions) { o.loc = loc }
}

// WithMissedTicks sets the policy for ticks missed while no process ran
// (default MissedLatest).
func WithMissedTicks(p MissedTicks) ScheduleOption {
	return func(o *scheduleOptions) { o.missed = p }
}

// ScheduleInfo describes one recurring schedule.
type ScheduleInfo struct {
	Name string
	Spec string
	// Zone names the time zone the ticks are planned in: the spec's
	// CRON_TZ= or TZ= prefix, else WithTimeZone's, else "UTC". An @every
	// spec's ticks are intervals, in no zone.
	Zone string
	// Missed is what happens to ticks missed while no process ran
	// (WithMissedTicks).
	Missed MissedTicks
	Next   time.Time // the next tick
	Last   time.Time // the latest tick that has fired; zero if none yet
	// Overdue: the next tick's time passed more than 10 s ago and no
	// process has fired it. A running process fires each tick on time, so
	// no process transfers the queue (or none reaches Redis); the tick
	// fires, as Missed says, when one starts.
	Overdue bool
}

// Schedule creates or replaces (by name) a recurring schedule (in
// partition 0 of a queue opened with blocking.WithPartitions, its ticks
// too, where calls by a tick's ID find them): at each tick
// of spec, v is delivered to the queue once, as an item whose ID is the
// name, "@" and the tick's time in UTC (e.g. "nightly@2026-12-02T03:00:00.000Z"),
// stable for that tick so consumers can deduplicate, with the header
// HeaderSchedule naming the schedule.
//
// spec is a standard cron expression: five fields (minute, hour, day of
// month, month, day of week), or six with seconds first; a descriptor
// (@every 90s, @hourly, @daily, @weekly, @monthly, @yearly); a CRON_TZ=
// (or TZ=) prefix names its time zone, an IANA name, not Local (see
// WithTimeZone), followed by the expression. Parsed by
// github.com/robfig/cron/v3. A spec that does not parse returns an error
// wrapping ErrInvalidArgument.
//
// The schedule lives in Redis and survives restarts of every process.
// Every process that transfers the queue (consumers, delayed queues that
// transfer, transfer.Run) takes part, none of them a leader: each tick is
// materialized as a delayed item a couple of seconds ahead, by whichever
// process gets there first, atomically and once, and then fires as
// precisely as any delayed item. No tick is lost while at least one such
// process runs; ticks missed while none ran follow WithMissedTicks.
//
// Scheduling the same name again with the same spec and options updates
// the value and changes no tick; with a new spec, the ticks the old one
// had materialized are withdrawn and the new one starts from its next
// tick, so no tick fires twice. A stored schedule that cannot be read
// (see Schedules) is replaced all the same; the ticks it had
// materialized are withdrawn when its record still lists them.
func (d *Queue[T]) Schedule(ctx context.Context, name, spec string, v T, opts ...ScheduleOption) error {
	if err := d.err(); err != nil {
		return err
	}
	o := scheduleOptions{missed: MissedLatest}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return d.q.Schedule(ctx, name, spec, v, o.loc, string(o.missed))
}

// Unschedule deletes the schedule called name, and withdraws the ticks it
// had materialized that have not fired: none fires after the call. It
// returns false when there was no such schedule. A stored schedule that
// cannot be read (see Schedules) is deleted all the same, with the ticks
// its record still lists.
func (d *Queue[T]) Unschedule(ctx context.Context, name string) (bool, error) {
	if err := d.err(); err != nil {
		return false, err
	}
	return d.q.Unschedule(ctx, name)
}

// Schedules lists the queue's recurring schedules, by name. A schedule
// record that cannot be read returns an error wrapping [ErrCorrupt] that
// names it.
func (d *Queue[T]) Schedules(ctx context.Context) ([]ScheduleInfo, error) {
	if err := d.err(); err != nil {
		return nil, err
	}
	infos, err := d.q.Schedules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]ScheduleInfo, len(infos))
	for i, in := range infos {
		out[i] = ScheduleInfo{
			Name: in.Name, Spec: in.Spec, Zone: in.Zone, Missed: MissedTicks(in.Missed),
			Next: in.Next, Last: in.Last, Overdue: in.Overdue,
		}
	}
	return out, nil
}
