package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/inspect"
)

// clearScreen moves a terminal's cursor home and clears the screen.
const clearScreen = "\x1b[H\x1b[2J"

// watchSample is one sample of `stats --watch -o json`.
type watchSample struct {
	Time   time.Time  `json:"time"`
	Queues []statsRow `json:"queues"`
}

// watchStats prints the stats of queue (of every queue when "") every
// interval until Ctrl-C or SIGTERM, which end it with no error. A first
// sample that fails ends it with the error; a later one prints the error
// on stderr and goes on.
func (a *app) watchStats(cmd *cobra.Command, queue string, interval time.Duration) error {
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := a.connect(cmd)
	if err != nil {
		return err
	}
	defer c.Close()
	in := a.inspector(c.rdb)
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	redraw := !a.json() && isTerminal(out)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var prev map[string]statsRow
	var prevAt time.Time
	var last []statsRow         // the last sample's rows, shown as stale while samples fail
	var failing time.Time       // when samples started failing; zero while they succeed
	warned := map[string]bool{} // registry entries skipped: told once
	evicting := ""              // the eviction policy last warned of
	skipped := func(name string, err error) {
		if !warned[name] {
			warned[name] = true
			a.warnSkipped(errOut, name, err)
		}
	}
	for n := 0; ; n++ {
		sctx, cancel := context.WithTimeout(ctx, a.flags.timeout)
		rows, err := collectStats(sctx, in, queue, skipped)
		if policy, perr := in.Eviction(sctx); err == nil && perr == nil && policy != evicting {
			warnEviction(errOut, policy)
			evicting = policy
		}
		cancel()
		at := time.Now()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && n == 0:
			return c.wrap(err, a.flags.timeout.String())
		case err != nil:
			msg := safeLines(a.redact(message(c.wrap(err, a.flags.timeout.String()))))
			fmt.Fprintf(errOut, "redelay: %s\n", msg)
			if failing.IsZero() {
				failing = at
			}
			what := "Redis unreachable"
			if errors.Is(err, inspect.ErrNotFound) || errors.Is(err, inspect.ErrInvalidArgument) {
				what = "stats failing" // Redis answered: the queue is gone
			}
			if err := a.writeStale(out, last, prevAt, failing, at, what, msg, redraw); err != nil {
				return err
			}
		default:
			failing = time.Time{}
			if prev != nil {
				addRates(rows, prev, at.Sub(prevAt))
			}
			prev, prevAt, last = byQueue(rows), at, rows
			if err := a.writeSample(out, rows, at, interval, n, redraw); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// writeSample prints the n-th sample (from 0): a line of JSON with -o
// json; else a table, redrawn in place on a terminal, else after a blank
// line from the second on.
func (a *app) writeSample(w io.Writer, rows []statsRow, at time.Time, interval time.Duration, n int, redraw bool) error {
	if a.json() {
		return writeJSONLine(w, watchSample{Time: jsonTime(at), Queues: rows})
	}
	switch {
	case redraw:
		fmt.Fprintf(w, "%severy %v, %s (Ctrl-C to stop)\n\n", clearScreen, interval, at.Format(time.TimeOnly))
	case n > 0:
		fmt.Fprintln(w)
	}
	return writeStatsTable(w, rows, true)
}

// writeStale says that the sample at failed, and since when samples fail,
// so that the figures of the last good sample (last, taken at lastAt) are
// not read as live: a line of JSON with -o json; on a terminal, the last
// table redrawn under a line that says so; else that line alone.
func (a *app) writeStale(w io.Writer, last []statsRow, lastAt, since, at time.Time, what, msg string, redraw bool) error {
	if a.json() {
		return writeJSONLine(w, watchFailure{Time: jsonTime(at), Error: msg, UnreachableSince: jsonTime(since)})
	}
	if !redraw {
		_, err := fmt.Fprintf(w, "\nSTALE: %s since %s — the last figures, above, are from %s\n",
			what, since.Format(time.TimeOnly), lastAt.Format(time.TimeOnly))
		return err
	}
	line := fmt.Sprintf("STALE: %s since %s — figures below are from %s", what, since.Format(time.TimeOnly), lastAt.Format(time.TimeOnly))
	fmt.Fprintf(w, "%s%s\n\n", clearScreen, line)
	return writeStatsTable(w, last, true)
}

// watchFailure is the JSON line of a sample that failed.
type watchFailure struct {
	Time             time.Time `json:"time"`
	Error            string    `json:"error"`
	UnreachableSince time.Time `json:"unreachable_since"`
}

// addRates sets the rates of rows from the counts of the previous sample,
// taken elapsed before. A queue new since then gets none.
func addRates(rows []statsRow, prev map[string]statsRow, elapsed time.Duration) {
	secs := elapsed.Seconds()
	if secs <= 0 {
		return
	}
	for i := range rows {
		p, ok := prev[rows[i].Queue]
		if !ok {
			continue
		}
		ready := float64(rows[i].Ready-p.Ready) / secs
		dead := float64(rows[i].Dead-p.Dead) / secs
		rows[i].ReadyPerSec, rows[i].DeadPerSec = &ready, &dead
	}
}

// byQueue indexes rows by queue name.
func byQueue(rows []statsRow) map[string]statsRow {
	m := make(map[string]statsRow, len(rows))
	for _, r := range rows {
		m[r.Queue] = r
	}
	return m
}
