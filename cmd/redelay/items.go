package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
)

// Widths of the truncated columns of ls.
const (
	errorWidth   = 48
	payloadWidth = 60
)

// noEnvelope is the ID shown for bytes in a queue that are no envelope at
// all (an Item with an empty ID).
const noEnvelope = "(no envelope)"

// itemJSON is an item in the JSON of ls and get.
type itemJSON struct {
	ID string `json:"id"`
	// IDBase64 is the ID's bytes when they are not UTF-8, which ID cannot
	// carry (encoding/json writes U+FFFD for them).
	IDBase64      []byte    `json:"id_base64,omitempty"`
	State         string    `json:"state"`
	Attempt       int       `json:"attempt"`
	Priority      int       `json:"priority"`
	EnqueuedAt    time.Time `json:"enqueued_at,omitzero"`
	DueAt         time.Time `json:"due_at,omitzero"`
	LeaseDeadline time.Time `json:"lease_deadline,omitzero"`
	// LeaseLeftMS is how long the lease of an in-flight item has left,
	// by the server's clock when ls read it (negative once its deadline
	// passed); ls only, omitted for an item with no lease.
	LeaseLeftMS *int64            `json:"lease_left_ms,omitempty"`
	Expired     bool              `json:"expired"`
	Headers     map[string]string `json:"headers"`
	Error       string            `json:"error,omitempty"` // the redelay-error header
	// DeadAt is when a dead letter was dead-lettered; Errors the errors of
	// the item's last failed attempts, newest last.
	DeadAt        time.Time       `json:"dead_at,omitzero"`
	Errors        []string        `json:"errors,omitempty"`
	Value         json.RawMessage `json:"value"`
	ValueCut      string          `json:"value_cut,omitempty"` // why value is null though the payload decoded
	DecodeError   string          `json:"decode_error,omitempty"`
	PayloadBase64 []byte          `json:"payload_base64"`
}

// newItemJSON returns it for JSON.
func newItemJSON(it inspect.Item) itemJSON {
	h := it.Headers
	if h == nil {
		h = map[string]string{}
	}
	p := it.Payload
	if p == nil {
		p = []byte{}
	}
	value, cut := jsonValue(it)
	return itemJSON{
		ID:            it.ID,
		IDBase64:      idBase64(it.ID),
		State:         string(it.State),
		Attempt:       it.Attempt,
		Priority:      it.Priority,
		EnqueuedAt:    jsonTime(it.EnqueuedAt),
		DueAt:         jsonTime(it.DueAt),
		LeaseDeadline: jsonTime(it.LeaseDeadline),
		Expired:       it.Expired,
		Headers:       h,
		Error:         it.Headers[blocking.HeaderError],
		DeadAt:        jsonTime(it.DeadAt),
		Errors:        it.Errors,
		Value:         value,
		ValueCut:      cut,
		DecodeError:   it.DecodeError,
		PayloadBase64: p,
	}
}

// parseState reads a --state value that must be given; a bad one is a
// usage error listing the valid ones.
func parseState(s string) (inspect.State, error) {
	if s == "" {
		return "", usageErrorf("--state is required: one of %s", stateNames())
	}
	return parseStateValue(s)
}

// parseStateValue reads a --state value; a bad one, "" included, is a
// usage error listing the valid ones.
func parseStateValue(s string) (inspect.State, error) {
	st, err := inspect.ParseState(s)
	if err != nil {
		return "", usageErrorf("--state %q: want one of %s", s, stateNames())
	}
	return st, nil
}

// stateNames lists the states for messages: "delayed, retry, ...".
func stateNames() string {
	var names []string
	for _, st := range inspect.States() {
		names = append(names, string(st))
	}
	return strings.Join(names, ", ")
}

// completeState completes --state.
func completeState(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, st := range inspect.States() {
		out = append(out, string(st))
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// lsFlags are the flags of the ls command.
type lsFlags struct {
	state  string
	limit  int
	offset int
}

// lsCommand returns the ls command.
func (a *app) lsCommand() *cobra.Command {
	var f lsFlags
	cmd := &cobra.Command{
		Use:   "ls QUEUE [--state STATE]",
		Short: "List the items of a queue, of every state or of one",
		Long: `List up to --limit items of QUEUE, skipping the first --offset, without taking
them: of every state, delayed then retry, ready, inflight and dead, or of one
--state. Delayed items and retries come in due order, ready items in take
order, dead letters oldest first, in-flight items earliest lease deadline
first. Across every state, a page follows the counts of stats, read first:
items that change state meanwhile may shift it.

Columns: ID, STATE (of every state only), ATTEMPT (deliveries so far),
PRIORITY, DUE, ENQUEUED, LEASE (in-flight items: the lease deadline and the
time left, or expired, by the Redis server's clock; "not leased yet" for an
item being handed to a consumer), ERROR (the last failure, cut) and PAYLOAD
(the value as compact JSON, cut; the size and first bytes when it cannot be
decoded). Times are in the local time zone.

-o json prints an array of items, with every field: id (and id_base64, the
ID's bytes, when they are not UTF-8), state, attempt,
priority, enqueued_at, due_at, lease_deadline (RFC 3339, omitted when not set),
lease_left_ms (the lease's time left, negative once passed; omitted without
a lease), expired, headers, error, value (the payload decoded; null when it
cannot be, and decode_error says why, or when its text would be cut as get
cuts it, and value_cut says why) and payload_base64.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var states []inspect.State // every state when nil
			if cmd.Flags().Changed("state") {
				st, err := parseStateValue(f.state)
				if err != nil {
					return err
				}
				states = []inspect.State{st}
			}
			if f.limit < 1 || f.limit > inspect.MaxPage {
				return usageErrorf("--limit %d: want 1 to %d", f.limit, inspect.MaxPage)
			}
			if f.offset < 0 || f.offset > inspect.MaxOffset {
				return usageErrorf("--offset %d: want 0 to %d", f.offset, inspect.MaxOffset)
			}
			var items []inspect.Item
			var now time.Time // the server's clock, when an item is leased
			err := a.withConn(cmd, func(ctx context.Context, c *conn, in *inspect.Inspector) error {
				var err error
				if states == nil {
					items, err = listEvery(ctx, in, args[0], f.offset, f.limit)
				} else {
					items, err = in.List(ctx, args[0], states[0], f.offset, f.limit)
				}
				if err != nil {
					return asCommand(asCommand(err, "list", "ls"), "stats", "ls")
				}
				if slices.ContainsFunc(items, leased) {
					if now, err = c.rdb.Time(ctx).Result(); err != nil {
						return fmt.Errorf("ls %q: reading the server's clock: %w", args[0], err)
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if a.json() {
				out := make([]itemJSON, 0, len(items))
				for _, it := range items {
					j := newItemJSON(it)
					if leased(it) {
						left := millis(it.LeaseDeadline.Sub(now))
						j.LeaseLeftMS = &left
					}
					out = append(out, j)
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			cols := itemColumns{state: states == nil, lease: states == nil || states[0] == inspect.Inflight, now: now}
			return writeItemsTable(cmd.OutOrStdout(), items, cols)
		}),
	}
	cmd.Flags().StringVarP(&f.state, "state", "s", "", "the state to list: delayed, retry, ready, inflight or dead (default every state)")
	cmd.Flags().IntVar(&f.limit, "limit", 20, fmt.Sprintf("how many items at most (1 to %d)", inspect.MaxPage))
	cmd.Flags().IntVar(&f.offset, "offset", 0, "how many items to skip first")
	_ = cmd.RegisterFlagCompletionFunc("state", completeState)
	return cmd
}

// listEvery lists up to limit items of queue, of every state in the
// order of inspect.States, skipping the first offset. The page follows
// the counts of Stats, read first: a state that had no items then, or
// fewer than are skipped, is not read.
func listEvery(ctx context.Context, in *inspect.Inspector, queue string, offset, limit int) ([]inspect.Item, error) {
	st, err := in.Stats(ctx, queue)
	if err != nil {
		return nil, err
	}
	counts := map[inspect.State]int64{
		inspect.Delayed: st.Delayed, inspect.Retry: st.Retry, inspect.Ready: st.Ready,
		inspect.Inflight: st.Inflight, inspect.Dead: st.Dead,
	}
	skip := int64(offset)
	var out []inspect.Item
	for _, s := range inspect.States() {
		if len(out) == limit {
			break
		}
		if skip >= counts[s] {
			skip -= counts[s]
			continue
		}
		items, err := in.List(ctx, queue, s, int(skip), limit-len(out))
		if err != nil {
			return nil, err
		}
		skip = 0
		out = append(out, items...)
	}
	return out, nil
}

// leased reports whether it is an in-flight item with a lease.
func leased(it inspect.Item) bool {
	return it.State == inspect.Inflight && !it.LeaseDeadline.IsZero()
}

// itemColumns says which of its optional columns the table of ls has.
type itemColumns struct {
	state bool      // STATE: the items are of every state
	lease bool      // LEASE: some may be in flight
	now   time.Time // the server's clock, for the time left of a lease
}

// writeItemsTable writes the items as the table of ls, with the columns
// cols asks for.
func writeItemsTable(w io.Writer, items []inspect.Item, cols itemColumns) error {
	t := newTable(w)
	header := []string{"ID"}
	if cols.state {
		header = append(header, "STATE")
	}
	header = append(header, "ATTEMPT", "PRIORITY", "DUE", "ENQUEUED")
	if cols.lease {
		header = append(header, "LEASE")
	}
	fmt.Fprintln(t, strings.Join(append(header, "ERROR", "PAYLOAD"), "\t"))
	for _, it := range items {
		row := []string{itemID(it)}
		if cols.state {
			row = append(row, string(it.State))
		}
		row = append(row, fmt.Sprint(it.Attempt), fmt.Sprint(it.Priority), formatTime(it.DueAt), formatTime(it.EnqueuedAt))
		if cols.lease {
			row = append(row, formatLease(it, cols.now))
		}
		row = append(row, oneLine(it.Headers[blocking.HeaderError], errorWidth), oneLine(compactValue(it), payloadWidth))
		fmt.Fprintln(t, strings.Join(row, "\t"))
	}
	return t.Flush()
}

// formatLease returns the lease of it for a table: its deadline and the
// time left by the server's clock now ("2030-01-02T15:04:05Z (25s left)"),
// or "(expired)"; "not leased yet" for an in-flight item being handed to
// a consumer; "-" for an item not in flight.
func formatLease(it inspect.Item, now time.Time) string {
	switch {
	case it.State != inspect.Inflight:
		return none
	case it.LeaseDeadline.IsZero():
		return "not leased yet"
	}
	left := it.LeaseDeadline.Sub(now)
	if it.Expired || left <= 0 {
		return formatTime(it.LeaseDeadline) + " (expired)"
	}
	return fmt.Sprintf("%s (%s left)", formatTime(it.LeaseDeadline), formatDuration(left))
}

// idBase64 returns id's bytes for the id_base64 of JSON output when id
// is not UTF-8 (an ID may hold any bytes), else nil (omitted).
func idBase64(id string) []byte {
	if utf8.ValidString(id) {
		return nil
	}
	return []byte(id)
}

// itemID returns the item's ID for a table (safeText).
func itemID(it inspect.Item) string {
	if it.ID == "" {
		return noEnvelope
	}
	return safeText(it.ID)
}

// getCommand returns the get command.
func (a *app) getCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "get QUEUE ID",
		Short: "Show one item of a queue, wherever it is",
		Long: `Show the item of QUEUE with this ID, wherever it is (delayed, retry, ready,
inflight or dead), with every field: its headers (redelay-error holds the last
failure) and its value decoded as indented JSON; when the value cannot be
decoded, why, and the payload's size and first bytes. The value's text stops
at 256 KiB or 8 times the payload's size, whichever is more, and arrays and
objects nested more than 100 levels deep are shown as […] and {…}; a line
after the value says what was cut. The inspector does not decode values
nested more than 1000 levels deep.

-o json prints the item as ls -o json does.`,
		Args:              exactArgs("QUEUE", "ID"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var it inspect.Item
			err := a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				var err error
				it, err = in.Get(ctx, args[0], args[1])
				return err
			})
			if err != nil {
				return err
			}
			if a.json() {
				return writeJSON(cmd.OutOrStdout(), newItemJSON(it))
			}
			return writeItem(cmd.OutOrStdout(), args[0], it)
		}),
	}
}

// storyHeaders are the headers redelay keeps a failing item's story in
// (inspect.Item's Attempt, DeadAt and Errors read them).
var storyHeaders = []string{"redelay-errors", "redelay-dead-at", "redelay-attempts"}

// writeItem writes every field of the item of queue for people.
func writeItem(w io.Writer, queue string, it inspect.Item) error {
	t := newTable(w)
	fmt.Fprintf(t, "QUEUE\t%s\n", safeText(queue))
	fmt.Fprintf(t, "ID\t%s\n", itemID(it))
	fmt.Fprintf(t, "STATE\t%s\n", it.State)
	fmt.Fprintf(t, "ATTEMPT\t%d\n", it.Attempt)
	fmt.Fprintf(t, "PRIORITY\t%d\n", it.Priority)
	fmt.Fprintf(t, "ENQUEUED\t%s\n", formatTime(it.EnqueuedAt))
	fmt.Fprintf(t, "DUE\t%s\n", formatTime(it.DueAt))
	fmt.Fprintf(t, "LEASE-DEADLINE\t%s\n", formatTime(it.LeaseDeadline))
	fmt.Fprintf(t, "EXPIRED\t%s\n", yesNo(it.Expired))
	if !it.DeadAt.IsZero() {
		fmt.Fprintf(t, "DEAD-AT\t%s\n", formatTime(it.DeadAt))
	}
	for i, e := range it.Errors {
		label := ""
		if i == 0 {
			label = "ERRORS"
		}
		fmt.Fprintf(t, "%s\t%d. %s\n", label, i+1, oneLine(e, 500))
	}
	// The story headers are shown above, as DEAD-AT and ERRORS.
	headers := maps.Clone(it.Headers)
	for _, k := range storyHeaders {
		delete(headers, k)
	}
	if len(headers) == 0 {
		fmt.Fprintf(t, "HEADERS\t%s\n", none)
	}
	for i, k := range slices.Sorted(maps.Keys(headers)) {
		label := ""
		if i == 0 {
			label = "HEADERS"
		}
		lines := strings.Split(strings.ReplaceAll(headers[k], "\t", " "), "\n")
		fmt.Fprintf(t, "%s\t%s: %s\n", label, safeText(k), safeText(lines[0]))
		for _, l := range lines[1:] {
			fmt.Fprintf(t, "\t  %s\n", safeText(l))
		}
	}
	fmt.Fprintf(t, "PAYLOAD\t%d bytes\n", len(it.Payload))
	if it.DecodeError != "" {
		fmt.Fprintf(t, "DECODE-ERROR\t%s\n", oneLine(it.DecodeError, 500))
	}
	if err := t.Flush(); err != nil {
		return err
	}
	if v, cut, ok := prettyValue(it); ok {
		if _, err := io.WriteString(w, "VALUE\n"); err != nil {
			return err
		}
		if err := writeSafeLines(w, v); err != nil {
			return err
		}
		if cut != "" {
			_, err := fmt.Fprintf(w, "(the value is cut: %s; -o json has its stored bytes)\n", cut)
			return err
		}
		return nil
	}
	_, err := fmt.Fprintf(w, "RAW %s\n", rawSummary(it))
	return err
}
