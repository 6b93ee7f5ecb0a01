package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// ls without --state lists the items of every state, in the order of
// the states, with a STATE column and a LEASE column (the lease deadline
// of an in-flight item and the time left, by the server's clock); pages
// run across the states. -o json has the same fields, lease_left_ms too.
func TestLsEveryState(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		name := redistest.QueueName(t)
		seedtest.EveryState(t, rdb, name, func(id string) parcel { return parcel{SKU: id, Qty: 1} },
			blocking.WithVisibilityTimeout(time.Hour))
		order := []struct{ id, state string }{
			{seedtest.Delayed, "delayed"}, {seedtest.Retry, "retry"}, {seedtest.Ready, "ready"},
			{seedtest.Inflight, "inflight"}, {seedtest.Dead, "dead"},
		}

		out := ok(t, with(conn, "ls", name)...)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"ID", "STATE", "ATTEMPT", "PRIORITY", "DUE", "ENQUEUED", "LEASE", "ERROR", "PAYLOAD"}) {
			t.Fatalf("ls of every state: header %q\n%s", got, out)
		}
		if len(lines) != 1+len(order) {
			t.Fatalf("ls of every state: %d rows, want %d\n%s", len(lines)-1, len(order), out)
		}
		lease := regexp.MustCompile(` \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \((\d+m\d+s|1h0m0s) left\) `)
		for i, o := range order {
			f := strings.Fields(lines[1+i])
			if f[0] != o.id || f[1] != o.state {
				t.Errorf("row %d: %q, want %s %s\n%s", i, f[:2], o.id, o.state, out)
			}
			if leased := lease.MatchString(lines[1+i]); leased != (o.state == "inflight") {
				t.Errorf("row %s: lease shown %v\n%s", o.id, leased, out)
			}
		}

		page := ok(t, with(conn, "ls", name, "--offset", "2", "--limit", "2")...)
		if ids := firstColumn(page); !slices.Equal(ids, []string{seedtest.Ready, seedtest.Inflight}) {
			t.Errorf("ls --offset 2 --limit 2: %q\n%s", ids, page)
		}
		page = ok(t, with(conn, "ls", name, "--offset", "4")...)
		if ids := firstColumn(page); !slices.Equal(ids, []string{seedtest.Dead}) {
			t.Errorf("ls --offset 4: %q\n%s", ids, page)
		}

		inflight := ok(t, with(conn, "ls", name, "--state", "inflight")...)
		if h := strings.Fields(strings.SplitN(inflight, "\n", 2)[0]); !slices.Contains(h, "LEASE") || slices.Contains(h, "STATE") ||
			!lease.MatchString(inflight) {
			t.Errorf("ls --state inflight: want a LEASE column and no STATE column\n%s", inflight)
		}

		var items []map[string]any
		decode(t, ok(t, with(conn, "ls", name, "-o", "json")...), &items)
		if len(items) != len(order) {
			t.Fatalf("ls -o json: %d items, want %d", len(items), len(order))
		}
		for i, o := range order {
			it := items[i]
			left, hasLeft := it["lease_left_ms"].(float64)
			_, hasDeadline := it["lease_deadline"]
			if it["id"] != o.id || it["state"] != o.state || hasLeft != (o.state == "inflight") || hasDeadline != hasLeft {
				t.Errorf("ls -o json, item %d: %v; want %s %s", i, it, o.id, o.state)
			}
			if hasLeft && (left <= 0 || left > float64(time.Hour.Milliseconds()) || it["expired"] != false) {
				t.Errorf("ls -o json, in flight: lease_left_ms %v, expired %v", left, it["expired"])
			}
		}
	})
}

// firstColumn returns the first field of each row of a table, below its
// header.
func firstColumn(table string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		out = append(out, strings.Fields(l)[0])
	}
	return out
}
