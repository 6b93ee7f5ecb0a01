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
	IDBase64      []byte            `json:"id_base64,omitempty"`
	State         string            `json:"state"`
	Attempt       int               `json:"attempt"`
	Priority      int               `json:"priority"`
	EnqueuedAt    time.Time         `json:"enqueued_at,omitzero"`
	DueAt         time.Time         `json:"due_at,omitzero"`
	LeaseDeadline time.Time         `json:"lease_deadline,omitzero"`
	Expired       bool              `json:"expired"`
	Headers       map[string]string `json:"headers"`
	Error         string            `json:"error,omitempty"` // the redelay-error header
	Value         json.RawMessage   `json:"value"`
	ValueCut      string            `json:"value_cut,omitempty"` // why value is null though the payload decoded
	DecodeError   string            `json:"decode_error,omitempty"`
	PayloadBase64 []byte            `json:"payload_base64"`
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
		Value:         value,
		ValueCut:      cut,
		DecodeError:   it.DecodeError,
		PayloadBase64: p,
	}
}

// parseState reads a --state value; a bad one is a usage error listing
// the valid ones.
func parseState(s string) (inspect.State, error) {
	if s == "" {
		return "", usageErrorf("--state is required: one of %s", stateNames())
	}
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
		Use:   "ls QUEUE --state STATE",
		Short: "List the items of a queue in one state",
		Long: `List up to --limit items of QUEUE in --state (delayed, retry, ready, inflight
or dead), skipping the first --offset, without taking them: delayed items and
retries in due order, ready items in take order, dead letters oldest first,
in-flight items earliest lease deadline first.

Columns: ID, ATTEMPT (deliveries so far), PRIORITY, DUE, ENQUEUED, ERROR (the
last failure, cut) and PAYLOAD (the value as compact JSON, cut; the size and
first bytes when it cannot be decoded). Times are in the local time zone.

-o json prints an array of items, with every field: id (and id_base64, the
ID's bytes, when they are not UTF-8), state, attempt,
priority, enqueued_at, due_at, lease_deadline (RFC 3339, omitted when not set),
expired, headers, error, value (the payload decoded; null when it cannot be,
and decode_error says why, or when its text would be cut as get cuts it, and
value_cut says why) and payload_base64.`,
		Args:              exactArgs("QUEUE"),
		ValidArgsFunction: a.completeQueue,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			st, err := parseState(f.state)
			if err != nil {
				return err
			}
			if f.limit < 1 || f.limit > inspect.MaxPage {
				return usageErrorf("--limit %d: want 1 to %d", f.limit, inspect.MaxPage)
			}
			if f.offset < 0 {
				return usageErrorf("--offset %d: want 0 or more", f.offset)
			}
			var items []inspect.Item
			err = a.withInspector(cmd, func(ctx context.Context, in *inspect.Inspector) error {
				items, err = in.List(ctx, args[0], st, f.offset, f.limit)
				return asCommand(err, "list", "ls")
			})
			if err != nil {
				return err
			}
			if a.json() {
				out := make([]itemJSON, 0, len(items))
				for _, it := range items {
					out = append(out, newItemJSON(it))
				}
				return writeJSON(cmd.OutOrStdout(), out)
			}
			return writeItemsTable(cmd.OutOrStdout(), items)
		}),
	}
	cmd.Flags().StringVarP(&f.state, "state", "s", "", "the state to list: delayed, retry, ready, inflight or dead")
	cmd.Flags().IntVar(&f.limit, "limit", 20, fmt.Sprintf("how many items at most (1 to %d)", inspect.MaxPage))
	cmd.Flags().IntVar(&f.offset, "offset", 0, "how many items to skip first")
	_ = cmd.RegisterFlagCompletionFunc("state", completeState)
	return cmd
}

// writeItemsTable writes the items as the table of ls.
func writeItemsTable(w io.Writer, items []inspect.Item) error {
	t := newTable(w)
	fmt.Fprintln(t, "ID\tATTEMPT\tPRIORITY\tDUE\tENQUEUED\tERROR\tPAYLOAD")
	for _, it := range items {
		fmt.Fprintf(t, "%s\t%d\t%d\t%s\t%s\t%s\t%s\n",
			itemID(it), it.Attempt, it.Priority, formatTime(it.DueAt), formatTime(it.EnqueuedAt),
			oneLine(it.Headers[blocking.HeaderError], errorWidth), oneLine(compactValue(it), payloadWidth))
	}
	return t.Flush()
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
	if len(it.Headers) == 0 {
		fmt.Fprintf(t, "HEADERS\t%s\n", none)
	}
	for i, k := range slices.Sorted(maps.Keys(it.Headers)) {
		label := ""
		if i == 0 {
			label = "HEADERS"
		}
		lines := strings.Split(strings.ReplaceAll(it.Headers[k], "\t", " "), "\n")
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
