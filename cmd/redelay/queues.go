package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// queueJSON is one queue of `queues -o json`.
type queueJSON struct {
	Name string `json:"name"`
}

// queuesCommand returns the queues command.
func (a *app) queuesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "queues",
		Short: "List the queues on this Redis",
		Long: `List the queues on this Redis, by name: every queue a process consumed,
transferred (delayed.New, transfer.Run) or offered to (announced by the first
offer of each producing process).

-o json prints an array of {"name": ...}.`,
		Args: exactArgs(),
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			var names []string
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				names, err = in.Queues(ctx)
				return err
			})
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if a.json() {
				out := make([]queueJSON, 0, len(names))
				for _, n := range names {
					out = append(out, queueJSON{Name: n})
				}
				return writeJSON(w, out)
			}
			t := newTable(w)
			fmt.Fprintln(t, "QUEUE")
			for _, n := range names {
				fmt.Fprintln(t, safeText(n))
			}
			return t.Flush()
		}),
	}
}
