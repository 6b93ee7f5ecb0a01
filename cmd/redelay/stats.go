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

// statsRow is one queue's line of the stats command, and its JSON.
type statsRow struct {
	Queue     string    `json:"queue"`
	Delayed   int64     `json:"delayed"`
	Retry     int64     `json:"retry"`
	Ready     int64     `json:"ready"`
	Inflight  int64     `json:"inflight"`
	Dead      int64     `json:"dead"`
	Paused    bool      `json:"paused"`
	LatencyMS int64     `json:"latency_ms"`
	NextDue   time.Time `json:"next_due,omitzero"`
	// Processed and Failed are the queue's totals since it was first
	// used: items settled successfully, and failed attempts.
	Processed int64 `json:"processed"`
	Failed    int64 `json:"failed"`
	// Eviction is the maxmemory-policy of the queue's Redis server; ""
	// when unknown.
	Eviction string `json:"eviction,omitempty"`
	// ReadyPerSec and DeadPerSec are how fast Ready and Dead changed
	// since the previous sample of --watch, per second; nil on the first
	// sample and without --watch.
	ReadyPerSec *float64 `json:"ready_per_sec,omitempty"`
	DeadPerSec  *float64 `json:"dead_per_sec,omitempty"`

	latency time.Duration // Latency, for the table
}

// statsFlags are the flags of the stats command.
type statsFlags struct {
	watch    bool
	interval time.Duration
}

// statsCommand returns the stats command.
func (a *app) statsCommand() *cobra.Command {
	var f statsFlags
	cmd := &cobra.Command{
		Use:   "stats [QUEUE]",
		Short: "Count the items of every queue, or of one, by state",
		Long: `Count the items of every queue (see queues), or of QUEUE, by state: DELAYED
(not yet due), RETRY (failed, waiting for the next attempt), READY, INFLIGHT
(received, not settled) and DEAD; whether it is PAUSED; its LATENCY (how long
the oldest ready item has waited since it fell due: alert on it) and when its
next delayed item or retry falls due (NEXT-DUE); PROCESSED and FAILED count the
items settled successfully (acked, or taken) and the failed attempts since the
queue was first used. A name in the registry of
queues that is no valid queue name is skipped with a warning on stderr. When
the Redis server may evict keys (its maxmemory-policy, on any master, is not
noeviction), a warning on stderr says so: items can vanish without an error.

--watch samples again every --interval until Ctrl-C, redrawing in place on a
terminal (else printing one table after another, a blank line apart), and adds
how fast READY and DEAD change per second between samples (READY/S, DEAD/S).
Each sample must answer within --timeout. When a sample fails, the figures are
not shown as live: a line at the top says "Redis unreachable since 07:55:30 —
figures below are from 07:55:28" above the last table (on a terminal; else
that line alone, each sample), until a sample succeeds again.

-o json prints an array of objects: queue, delayed, retry, ready, inflight,
dead, paused, latency_ms, next_due (RFC 3339, omitted when none), processed,
failed, eviction
(the server's maxmemory-policy, omitted when unknown). With --watch,
one line of JSON per sample: {"time": ..., "queues": [...]}, the queues with
ready_per_sec and dead_per_sec from the second sample on; a failed sample is
{"time": ..., "error": ..., "unreachable_since": ...}.`,
		Args:              rangeArgs(0, "QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			queue := ""
			if len(args) == 1 {
				queue = args[0]
			}
			if f.watch {
				if f.interval <= 0 {
					return usageErrorf("--interval %v: want a positive duration such as 2s", f.interval)
				}
				return a.watchStats(cmd, queue, f.interval)
			}
			var rows []statsRow
			policy := ""
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				rows, err = collectStats(ctx, in, queue, func(name string, err error) {
					a.warnSkipped(cmd.ErrOrStderr(), name, err)
				})
				if err == nil {
					policy, err = in.Eviction(ctx)
				}
				return err
			})
			if err != nil {
				return err
			}
			warnEviction(cmd.ErrOrStderr(), policy)
			if a.json() {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			return writeStatsTable(cmd.OutOrStdout(), rows, false)
		}),
	}
	cmd.Flags().BoolVarP(&f.watch, "watch", "w", false, "sample again every --interval until interrupted")
	cmd.Flags().DurationVar(&f.interval, "interval", 2*time.Second, "time between two samples of --watch")
	return cmd
}

// collectStats reads the stats of queue, or of every queue when queue is
// "". A queue that disappears from the registry while they are read is
// left out; so is a name in the registry that is no queue name (written
// there by hand or by another tool), which is passed to skipped with the
// error that says why, so that one bad entry does not hide every queue.
func collectStats(ctx context.Context, in *inspect.Inspector, queue string, skipped func(name string, err error)) ([]statsRow, error) {
	var all []inspect.QueueStats
	if queue == "" {
		var err error
		if all, err = in.AllStats(ctx); err != nil { // a bounded number of round trips
			return nil, err
		}
	} else {
		st, err := in.Stats(ctx, queue)
		all = []inspect.QueueStats{{Queue: queue, Stats: st, Err: err}}
	}
	rows := make([]statsRow, 0, len(all))
	for _, qs := range all {
		name, st, err := qs.Queue, qs.Stats, qs.Err
		if errors.Is(err, inspect.ErrNotFound) && queue == "" {
			continue
		}
		if errors.Is(err, inspect.ErrInvalidArgument) && queue == "" {
			skipped(name, err)
			continue
		}
		if err != nil {
			return nil, err
		}
		rows = append(rows, statsRow{
			Queue:     name,
			Delayed:   st.Delayed,
			Retry:     st.Retry,
			Ready:     st.Ready,
			Inflight:  st.Inflight,
			Dead:      st.Dead,
			Paused:    st.Paused,
			LatencyMS: millis(st.Latency),
			NextDue:   jsonTime(st.NextDue),
			Processed: st.Processed,
			Failed:    st.Failed,
			Eviction:  st.Eviction,
			latency:   st.Latency,
		})
	}
	return rows, nil
}

// warnSkipped tells on w that stats skipped the registry entry name
// (collectStats).
func (a *app) warnSkipped(w io.Writer, name string, err error) {
	fmt.Fprintf(w, "redelay: warning: skipped %q of the registry of queues: %s\n", name, safeLines(message(err)))
}

// warnEviction tells on w that the Redis server may evict keys, when its
// maxmemory-policy is known and is not noeviction.
func warnEviction(w io.Writer, policy string) {
	if policy == "" || policy == "noeviction" {
		return
	}
	fmt.Fprintf(w, "redelay: warning: Redis may evict keys when it is full (maxmemory-policy %s): queued items can vanish without an error; set maxmemory-policy noeviction\n", safeText(policy))
}

// writeStatsTable writes rows as a table; with rates, with the READY/S
// and DEAD/S columns, blank where a row has none.
func writeStatsTable(w io.Writer, rows []statsRow, rates bool) error {
	t := newTable(w)
	header := "QUEUE\tDELAYED\tRETRY\tREADY\tINFLIGHT\tDEAD\tPAUSED\tLATENCY\tNEXT-DUE\tPROCESSED\tFAILED"
	if rates {
		header += "\tREADY/S\tDEAD/S"
	}
	fmt.Fprintln(t, header)
	for _, r := range rows {
		fmt.Fprintf(t, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%d\t%d",
			safeText(r.Queue), r.Delayed, r.Retry, r.Ready, r.Inflight, r.Dead,
			yesNo(r.Paused), formatDuration(r.latency), formatTime(r.NextDue), r.Processed, r.Failed)
		if rates {
			fmt.Fprintf(t, "\t%s\t%s", formatRate(r.ReadyPerSec), formatRate(r.DeadPerSec))
		}
		fmt.Fprintln(t)
	}
	return t.Flush()
}

// formatRate returns a rate per second for a table: signed, one decimal;
// "" when there is none.
func formatRate(r *float64) string {
	if r == nil {
		return ""
	}
	if *r == 0 {
		return "0"
	}
	return fmt.Sprintf("%+.1f", *r)
}
