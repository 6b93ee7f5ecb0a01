package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// pauseCommand returns the pause command.
func (a *app) pauseCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "pause QUEUE",
		Short: "Stop every process from handing out a queue's items",
		Long: `Stop every process from handing out the items of QUEUE, until resume: consumers
wait, while offers, transfers of due items and the reclaiming of expired leases
go on. The flag lives in Redis, across restarts. Pausing a paused queue is
harmless.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.setPaused(cmd, args[0], true)
		}),
	}
}

// resumeCommand returns the resume command.
func (a *app) resumeCommand() *cobra.Command {
	return &cobra.Command{
		Use:               "resume QUEUE",
		Short:             "Undo pause: consumers go on at once",
		Long:              `Undo pause: the waiting consumers of QUEUE, in every process, go on at once. Resuming a queue that is not paused is harmless.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return a.setPaused(cmd, args[0], false)
		}),
	}
}

// setPaused pauses or resumes queue, and says so.
func (a *app) setPaused(cmd *cobra.Command, queue string, paused bool) error {
	err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
		if paused {
			return in.Pause(ctx, queue)
		}
		return in.Resume(ctx, queue)
	})
	if err != nil {
		return err
	}
	verb := "resumed"
	if paused {
		verb = "paused"
	}
	return a.report(cmd.OutOrStdout(), changeJSON{Queue: queue, Action: verb, Paused: &paused},
		fmt.Sprintf("%s queue %q", verb, queue))
}
