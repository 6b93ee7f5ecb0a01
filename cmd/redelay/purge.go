package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// errAborted is the error of a purge that was not confirmed.
var errAborted = errors.New("aborted")

// purgeFlags are the flags of the purge command.
type purgeFlags struct {
	state string
	yes   bool
}

// purgeCommand returns the purge command.
func (a *app) purgeCommand() *cobra.Command {
	var f purgeFlags
	cmd := &cobra.Command{
		Use:   "purge QUEUE --state STATE",
		Short: "Drop every item of a queue in one state",
		Long: `Drop every item of QUEUE in --state (delayed, retry, ready, inflight or dead),
atomically, and say how many there were. Items arriving in that state
afterwards stay. Purging inflight drops every lease: nothing is delivered again.

It first asks "Purge N STATE items of QUEUE? [y/N]" and reads one line from
standard input: anything but y or yes purges nothing, and exits with status 1.
--yes purges without asking.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			st, err := parseState(f.state)
			if err != nil {
				return err
			}
			c, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			in := a.inspector(c.rdb)
			if !f.yes {
				ctx, cancel := context.WithTimeout(cmd.Context(), a.flags.timeout)
				stats, err := in.Stats(ctx, queue)
				cancel()
				if err != nil {
					return c.wrap(err, a.flags.timeout.String())
				}
				prompt := fmt.Sprintf("Purge %d %s items of %s? [y/N] ", countOf(stats, st), st, queue)
				if err := confirm(cmd.InOrStdin(), cmd.ErrOrStderr(), prompt); err != nil {
					return err
				}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.flags.timeout)
			defer cancel()
			n, err := in.Purge(ctx, queue, st)
			if err != nil {
				return c.wrap(err, a.flags.timeout.String())
			}
			return a.report(cmd.OutOrStdout(), changeJSON{Queue: queue, Action: "purged", State: string(st), Count: &n},
				fmt.Sprintf("purged %s of queue %q", count(n, string(st)+" item"), queue))
		}),
	}
	cmd.Flags().StringVarP(&f.state, "state", "s", "", "the state to purge: delayed, retry, ready, inflight or dead")
	cmd.Flags().BoolVarP(&f.yes, "yes", "y", false, "purge without asking")
	_ = cmd.RegisterFlagCompletionFunc("state", completeState)
	return cmd
}

// countOf returns the count of state st in stats.
func countOf(stats inspect.Stats, st inspect.State) int64 {
	switch st {
	case inspect.Delayed:
		return stats.Delayed
	case inspect.Retry:
		return stats.Retry
	case inspect.Ready:
		return stats.Ready
	case inspect.Inflight:
		return stats.Inflight
	default:
		return stats.Dead
	}
}

// confirm writes prompt to w and reads one line from r: nil for y or yes
// (any case), errAborted for anything else, the end of the input
// included.
func confirm(r io.Reader, w io.Writer, prompt string) error {
	fmt.Fprint(w, prompt)
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if err != nil && line == "" {
		fmt.Fprintln(w)
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	default:
		return errAborted
	}
}

// forgetCommand returns the forget command.
func (a *app) forgetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "forget QUEUE",
		Short: "Remove a queue that holds nothing, and what it left in Redis",
		Long: `Remove QUEUE, which must hold nothing (no item in any state, no recurring
schedule), from this Redis: what it left behind (settings, recorded codec,
totals and history, counters) is deleted and it leaves the registry of queues.
Exit 1, changing nothing, when it holds anything: purge it first. A process
that uses the queue again brings it back. Queues that hold nothing and that no
process used for the retention period (blocking.WithRetention, a week by
default) are forgotten by the processes themselves.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				return in.Forget(ctx, args[0])
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), changeJSON{Queue: args[0], Action: "forgotten"},
				fmt.Sprintf("forgot queue %q", args[0]))
		}),
	}
}
