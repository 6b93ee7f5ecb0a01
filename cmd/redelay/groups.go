package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// groupJSON is one group of `groups -o json`.
type groupJSON struct {
	Group    string `json:"group"`
	Ready    int64  `json:"ready"`
	InFlight int64  `json:"inflight"`
	Paused   bool   `json:"paused"`
}

// groupsCommand returns the groups command.
func (a *app) groupsCommand() *cobra.Command {
	var offset, limit int
	cmd := &cobra.Command{
		Use:   "groups QUEUE",
		Short: "List a queue's groups, largest first",
		Long: `List the groups of QUEUE (blocking.WithGroup) that hold ready or in-flight
items, largest (READY + INFLIGHT) first, and whether each is PAUSED. Items
offered without a group, in a queue that has had grouped items, are the
group "" (shown as -).

-o json prints an array of objects: group, ready, inflight, paused.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if limit < 1 || limit > inspect.MaxPage || offset < 0 {
				return usageErrorf("--limit must be 1 to %d and --offset at least 0", inspect.MaxPage)
			}
			var gs []inspect.Group
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				gs, err = in.Groups(ctx, args[0], offset, limit)
				return err
			})
			if err != nil {
				return err
			}
			out := make([]groupJSON, len(gs))
			for i, g := range gs {
				out[i] = groupJSON{Group: g.Key, Ready: g.Ready, InFlight: g.InFlight, Paused: g.Paused}
			}
			w := cmd.OutOrStdout()
			if a.json() {
				return writeJSON(w, out)
			}
			t := newTable(w)
			fmt.Fprintln(t, "GROUP\tREADY\tINFLIGHT\tPAUSED")
			for _, g := range out {
				key := safeText(g.Group)
				if key == "" {
					key = "-"
				}
				paused := ""
				if g.Paused {
					paused = "yes"
				}
				fmt.Fprintf(t, "%s\t%d\t%d\t%s\n", key, g.Ready, g.InFlight, paused)
			}
			return t.Flush()
		}),
	}
	cmd.Flags().IntVar(&limit, "limit", 20, fmt.Sprintf("how many groups at most (1 to %d)", inspect.MaxPage))
	cmd.Flags().IntVar(&offset, "offset", 0, "how many groups to skip first")
	return cmd
}

// pauseGroupCommand returns the pause-group command.
func (a *app) pauseGroupCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pause-group QUEUE GROUP",
		Short: "Stop every process from handing out one group's items",
		Long: `Stop every process from handing out the items of GROUP in QUEUE, until
resume-group; the other groups go on. The flag lives in Redis.`,
		Args:              exactArgs("QUEUE", "GROUP"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.setGroupPaused(cmd, args[0], args[1], true)
		}),
	}
}

// resumeGroupCommand returns the resume-group command.
func (a *app) resumeGroupCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "resume-group QUEUE GROUP",
		Short:             "Undo pause-group: the group takes its turn again",
		Long:              `Undo pause-group: GROUP of QUEUE takes its turn again at once. Resuming a group that is not paused is harmless.`,
		Args:              exactArgs("QUEUE", "GROUP"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.setGroupPaused(cmd, args[0], args[1], false)
		}),
	}
}

// setGroupPaused pauses or resumes one group of queue, and says so.
func (a *app) setGroupPaused(cmd *cobra.Command, queue, group string, paused bool) error {
	err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
		if paused {
			return in.PauseGroup(ctx, queue, group)
		}
		return in.ResumeGroup(ctx, queue, group)
	})
	if err != nil {
		return err
	}
	verb := "resumed"
	if paused {
		verb = "paused"
	}
	return a.report(cmd.OutOrStdout(), changeJSON{Queue: queue, Action: verb, Group: group, Paused: &paused},
		fmt.Sprintf("%s group %q of queue %q", verb, group, queue))
}
