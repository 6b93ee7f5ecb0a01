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
