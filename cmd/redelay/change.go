package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// changeJSON is what a command that changes a queue prints with -o json.
type changeJSON struct {
	Queue string `json:"queue"`
	// Action is what was done: cancelled, rescheduled, promoted,
	// requeued, purged, paused, resumed, ran (a schedule), unscheduled or
	// forgotten.
	Action   string `json:"action"`
	Schedule string `json:"schedule,omitempty"` // the schedule run or unscheduled
	Group    string `json:"group,omitempty"`    // the group paused or resumed
	ID       string `json:"id,omitempty"`
	// IDBase64 is the ID's bytes when they are not UTF-8 (see itemJSON).
	IDBase64 []byte    `json:"id_base64,omitempty"`
	State    string    `json:"state,omitempty"`  // the state purged
	DueAt    time.Time `json:"due_at,omitzero"`  // the new due time of reschedule
	Count    *int64    `json:"count,omitempty"`  // how many items requeue or purge moved
	Paused   *bool     `json:"paused,omitempty"` // the pause flag after pause or resume
}

// report prints what a change did: ch with -o json, else text.
func (a *app) report(w io.Writer, ch changeJSON, text string) error {
	if a.json() {
		ch.IDBase64 = idBase64(ch.ID)
		return writeJSON(w, ch)
	}
	_, err := fmt.Fprintln(w, text)
	return err
}

// cancelCommand returns the cancel command.
func (a *app) cancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel QUEUE ID",
		Short: "Delete one item of a queue, wherever it is",
		Long: `Delete the item of QUEUE with this ID, wherever it is: a delayed item (a timer
cancelled), a retry, a ready item, an in-flight item (its handler's work is not
undone, and its consumer loses the lease) or a dead letter.`,
		Args:              exactArgs("QUEUE", "ID"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			queue, id := args[0], args[1]
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				return asCommand(in.Delete(ctx, queue, id), "delete", "cancel")
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), changeJSON{Queue: queue, Action: "cancelled", ID: id},
				fmt.Sprintf("cancelled %q of queue %q", id, queue))
		}),
	}
}

// rescheduleCommand returns the reschedule command.
func (a *app) rescheduleCommand() *cobra.Command {
	var allowPast bool
	cmd := &cobra.Command{
		Use:   "reschedule QUEUE ID (DURATION|TIME)",
		Short: "Move a delayed item or retry to a new due time",
		Long: `Move the delayed item or retry of QUEUE with this ID to fall due at a new time:
a DURATION from now on the Redis server's clock (90s, 10m, 1h30m), or an RFC
3339 TIME (2030-01-02T15:04:05Z, 2030-01-02T15:04:05+01:00). It keeps its ID,
value and headers. A time that passed more than a second ago is refused:
promote makes an item ready now; --allow-past keeps a past due time (the
item is ready at once, and its latency counts from that time).`,
		Args:              exactArgs("QUEUE", "ID", "DURATION|TIME"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			queue, id := args[0], args[1]
			after, at, err := parseDue(args[2])
			if err != nil {
				return err
			}
			c, err := a.connect(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), a.flags.timeout)
			defer cancel()
			if at.IsZero() {
				now, err := c.rdb.Time(ctx).Result()
				if err != nil {
					return c.wrap(fmt.Errorf("reschedule %q: reading the server's clock: %w", queue, err), a.flags.timeout.String())
				}
				at = now.Add(after)
			}
			var opts []inspect.RescheduleOption
			if allowPast {
				opts = append(opts, inspect.AllowPast())
			}
			if err := a.inspector(c.rdb).Reschedule(ctx, queue, id, at, opts...); err != nil {
				if errors.Is(err, inspect.ErrInvalidArgument) && !allowPast && at.Before(time.Now()) {
					err = fmt.Errorf("%w (--allow-past keeps a past due time)", err)
				}
				return c.wrap(err, a.flags.timeout.String())
			}
			return a.report(cmd.OutOrStdout(), changeJSON{Queue: queue, Action: "rescheduled", ID: id, DueAt: jsonTime(at)},
				fmt.Sprintf("rescheduled %q of queue %q to %s", id, queue, formatTime(at)))
		}),
	}
	cmd.Flags().BoolVar(&allowPast, "allow-past", false, "accept a due time that has passed (the item is ready at once)")
	return cmd
}

// parseDue reads the due time of reschedule: a duration from now (after,
// with a zero at) or an RFC 3339 time (at). Anything else is a usage
// error.
func parseDue(s string) (after time.Duration, at time.Time, err error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if t.IsZero() {
			return 0, time.Time{}, usageErrorf("due time %q: want a time after 1970", s)
		}
		return 0, t, nil
	}
	return 0, time.Time{}, usageErrorf("due time %q: want a duration from now (90s, 10m, 1h30m) or an RFC 3339 time (2030-01-02T15:04:05Z)", s)
}

// promoteCommand returns the promote command.
func (a *app) promoteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "promote QUEUE ID",
		Short: "Make a delayed item or retry due now",
		Long: `Make the delayed item or retry of QUEUE with this ID due now: it joins the
ready items at once, behind those already ready.`,
		Args:              exactArgs("QUEUE", "ID"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			queue, id := args[0], args[1]
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				return in.Promote(ctx, queue, id)
			})
			if err != nil {
				return err
			}
			return a.report(cmd.OutOrStdout(), changeJSON{Queue: queue, Action: "promoted", ID: id},
				fmt.Sprintf("promoted %q of queue %q: ready now", id, queue))
		}),
	}
}

// requeueCommand returns the requeue command.
func (a *app) requeueCommand() *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "requeue QUEUE (ID|--all)",
		Short: "Move dead letters back to the ready items",
		Long: `Move the dead letter of QUEUE with this ID, or with --all every dead letter
(oldest first), back to the ready items, with the attempt counter reset.`,
		Args:              rangeArgs(1, "QUEUE", "ID"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			queue := args[0]
			switch {
			case all && len(args) == 2:
				return usageErrorf("requeue: give an ID or --all, not both")
			case !all && len(args) == 1:
				return usageErrorf("requeue: give the ID of a dead letter, or --all")
			}
			var n int64 = 1
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				if all {
					var err error
					n, err = in.RequeueAll(ctx, queue)
					return asCommand(err, "requeue all", "requeue --all")
				}
				return in.Requeue(ctx, queue, args[1])
			})
			if err != nil {
				if all && n > 0 {
					return fmt.Errorf("%w (%d dead letters were requeued before)", err, n)
				}
				return err
			}
			ch := changeJSON{Queue: queue, Action: "requeued", Count: &n}
			text := fmt.Sprintf("requeued %s of queue %q", count(n, "dead letter"), queue)
			if !all {
				ch.ID = args[1]
				text = fmt.Sprintf("requeued dead letter %q of queue %q", args[1], queue)
			}
			return a.report(cmd.OutOrStdout(), ch, text)
		}),
	}
	cmd.Flags().BoolVar(&all, "all", false, "requeue every dead letter")
	return cmd
}
