package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// scheduleJSON is one schedule of `schedules -o json`.
type scheduleJSON struct {
	Name    string    `json:"name"`
	Spec    string    `json:"spec"`
	Zone    string    `json:"zone"`
	Missed  string    `json:"missed"`
	Next    time.Time `json:"next,omitzero"`
	Last    time.Time `json:"last,omitzero"`
	Overdue bool      `json:"overdue"`
}

// schedulesCommand returns the schedules command.
func (a *app) schedulesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "schedules QUEUE",
		Short: "List the recurring schedules of a queue",
		Long: `List the recurring schedules of QUEUE (delayed.Queue.Schedule) by name: NAME,
SPEC (the cron spec), ZONE (the time zone its ticks are planned in), MISSED
(what happens to ticks missed while no process ran: latest, skip or all),
NEXT (the next tick; "OVERDUE" after it when its time passed more than 10 s
ago and no process fired it, which means no process transfers the queue)
and LAST (the latest tick that fired; - if none yet).

-o json prints an array of objects: name, spec, zone, missed, next, last
(RFC 3339, omitted when none), overdue.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var infos []inspect.ScheduleInfo
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				infos, err = in.Schedules(ctx, args[0])
				return err
			})
			if err != nil {
				return err
			}
			if a.json() {
				out := make([]scheduleJSON, 0, len(infos))
				for _, s := range infos {
					out = append(out, scheduleJSON{
						Name: s.Name, Spec: s.Spec, Zone: s.Zone, Missed: string(s.Missed),
						Next: jsonTime(s.Next), Last: jsonTime(s.Last), Overdue: s.Overdue,
					})
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			t := newTable(cmd.OutOrStdout())
			fmt.Fprintln(t, "NAME\tSPEC\tZONE\tMISSED\tNEXT\tLAST")
			for _, s := range infos {
				next := formatTime(s.Next)
				if s.Overdue {
					next += " OVERDUE: no process transfers this queue"
				}
				fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\n", oneLine(s.Name, 200), oneLine(s.Spec, 200), oneLine(s.Zone, 100), s.Missed, next, formatTime(s.Last))
			}
			return t.Flush()
		}),
	}
}

// runScheduleCommand returns the run-schedule command.
func (a *app) runScheduleCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "run-schedule QUEUE SCHEDULE",
		Short: "Run a recurring schedule once, now",
		Long: `Offer one item with the value of the recurring schedule SCHEDULE of QUEUE, ready
at once, under a new ID (SCHEDULE@run-…), which it prints. The schedule and its
next tick stay as they are. Exit 1 when there is no such schedule.`,
		Args:              exactArgs("QUEUE", "SCHEDULE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var id string
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				id, err = in.RunSchedule(ctx, args[0], args[1])
				return err
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), changeJSON{Queue: args[0], Action: "ran", Schedule: args[1], ID: id},
				fmt.Sprintf("ran schedule %q of queue %q now: item %q", args[1], args[0], id))
		}),
	}
}

// unscheduleCommand returns the unschedule command.
func (a *app) unscheduleCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "unschedule QUEUE SCHEDULE",
		Short: "Remove a recurring schedule and its ticks not yet delivered",
		Long: `Remove the recurring schedule SCHEDULE of QUEUE and its ticks not yet delivered,
as delayed.Queue.Unschedule does. Exit 1 when there is no such schedule. A
process that calls Schedule again at its start puts it back.`,
		Args:              exactArgs("QUEUE", "SCHEDULE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var found bool
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				found, err = in.Unschedule(ctx, args[0], args[1])
				if err == nil && !found {
					err = fmt.Errorf("unschedule %q: no schedule %q: %w", args[0], args[1], inspect.ErrNotFound)
				}
				return err
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), changeJSON{Queue: args[0], Action: "unscheduled", Schedule: args[1]},
				fmt.Sprintf("unscheduled %q of queue %q", args[1], args[0]))
		}),
	}
}
