package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// consumerJSON is one consumer of `consumers -o json`.
type consumerJSON struct {
	Queue       string    `json:"queue"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Concurrency int       `json:"concurrency"`
	InFlight    int       `json:"inflight"`
	Started     time.Time `json:"started"`
	LastSeen    time.Time `json:"last_seen"`
}

// consumersCommand returns the consumers command.
func (a *app) consumersCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "consumers [QUEUE]",
		Short: "List the processes consuming every queue, or one",
		Long: `List the processes consuming the queues (every Consume records itself while
it runs): the QUEUE, the HOST and PID of the process, its CONCURRENCY, the
items its handlers held in flight at its last refresh (INFLIGHT), when it
STARTED and when it was LAST-SEEN (it refreshes every 5 s). A process that
crashed is no longer listed 30 s after its last refresh.

-o json prints an array of objects: queue, host, pid, concurrency, inflight,
started, last_seen.`,
		Args:              rangeArgs(0, "QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var all []inspect.Consumer
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				all, err = in.Consumers(ctx)
				return err
			})
			if err != nil {
				return err
			}
			out := make([]consumerJSON, 0, len(all))
			for _, c := range all {
				if len(args) == 1 && c.Queue != args[0] {
					continue
				}
				out = append(out, consumerJSON(c))
			}
			w := cmd.OutOrStdout()
			if a.json() {
				return writeJSON(w, out)
			}
			t := newTable(w)
			fmt.Fprintln(t, "QUEUE\tHOST\tPID\tCONCURRENCY\tINFLIGHT\tSTARTED\tLAST-SEEN")
			for _, c := range out {
				fmt.Fprintf(t, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", safeText(c.Queue), safeText(c.Host), c.PID,
					c.Concurrency, c.InFlight, formatTime(c.Started), formatTime(c.LastSeen))
			}
			return t.Flush()
		}),
	}
}
