package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// A name in the registry that is no valid queue name (written there by
// hand, or by a tool that does not check) does not keep stats from
// showing every other queue: it is named on stderr and skipped.
func TestStatsSkipsBadRegistryName(t *testing.T) {
	rdb := redistest.StartServer(t).Client(t)
	conn := connFlags(t, rdb)
	ctx := context.Background()
	q := blocking.New[parcel](rdb, "good")
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q) // its transfer announces the queue
	t.Cleanup(func() { _ = dq.Close() })
	if _, err := q.Offer(ctx, parcel{SKU: "x"}); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 10*time.Second, "the queue in the registry", func() bool {
		names, err := inspect.New(rdb).Queues(ctx)
		return err == nil && len(names) == 1
	})
	if err := rdb.ZAdd(ctx, keys.Registry, redis.Z{Score: 1, Member: "bad{name\x1b[2J"}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"stats"}, {"stats", "-o", "json"}} {
		r := cli(t, with(conn, args...)...)
		if r.code != 0 {
			t.Fatalf("redelay %q: %v", args, r)
		}
		if !strings.Contains(r.stdout, "good") {
			t.Errorf("redelay %q shows no queue good: %v", args, r)
		}
		if !strings.Contains(r.stderr, `bad{name\x1b[2J`) || !strings.Contains(r.stderr, "skipped") {
			t.Errorf("redelay %q does not name the skipped entry on stderr: %v", args, r)
		}
		if bad := terminalSafe(r.stdout + r.stderr); bad != "" {
			t.Errorf("redelay %q prints %s: %v", args, bad, r)
		}
	}
	var rows []map[string]any
	decode(t, ok(t, with(conn, "stats", "-o", "json")...), &rows)
	if len(rows) != 1 || rows[0]["queue"] != "good" {
		t.Errorf("stats -o json = %v, want the one row of good", rows)
	}
	// One queue asked by name still fails on its own bad name.
	if r := cli(t, with(conn, "stats", "bad{name")...); r.code != 2 {
		t.Errorf("stats of a bad name: %v, want exit 2", r)
	}
}
