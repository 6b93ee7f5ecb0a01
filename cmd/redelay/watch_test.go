package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
)

// stats --watch prints a table per interval, with rates from the second
// on, until interrupted, and then exits 0.
func TestStatsWatch(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		q := blocking.New[parcel](rdb, name)
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // ready items arrive while it watches
			defer close(done)
			for {
				select {
				case <-stop:
					return
				case <-time.After(50 * time.Millisecond):
					_, _ = q.Offer(context.Background(), parcel{SKU: "more", Qty: 1})
				}
			}
		}()
		defer func() { close(stop); <-done }()

		out := watch(t, with(conn, "stats", name, "--watch", "--interval", "200ms")...)
		tables := strings.Split(strings.TrimSuffix(out, "\n"), "\n\n")
		if len(tables) < 2 {
			t.Fatalf("stats --watch printed %d tables in a second:\n%s", len(tables), out)
		}
		for i, table := range tables {
			lines := strings.Split(table, "\n")
			if len(lines) != 2 || !strings.HasSuffix(strings.Join(strings.Fields(lines[0]), " "), "NEXT-DUE READY/S DEAD/S") {
				t.Fatalf("table %d:\n%s", i, table)
			}
			fields := strings.Fields(lines[1])
			switch {
			case i == 0 && len(fields) != 9:
				t.Fatalf("first table has rates:\n%s", table)
			case i > 0 && (len(fields) != 11 || !strings.HasPrefix(fields[9], "+") || fields[10] != "0"):
				t.Fatalf("table %d has no rates, or wrong ones:\n%s", i, table)
			}
		}

		lines := strings.Split(strings.TrimSpace(watch(t, with(conn, "stats", "--watch", "--interval", "200ms", "-o", "json")...)), "\n")
		if len(lines) < 2 {
			t.Fatalf("stats --watch -o json printed %d lines", len(lines))
		}
		for i, l := range lines {
			var s struct {
				Time   time.Time        `json:"time"`
				Queues []map[string]any `json:"queues"`
			}
			if err := json.Unmarshal([]byte(l), &s); err != nil || s.Time.IsZero() || len(s.Queues) == 0 {
				t.Fatalf("line %d of stats --watch -o json: %q: %v", i, l, err)
			}
			for _, row := range s.Queues {
				if _, ok := row["ready_per_sec"]; ok != (i > 0) {
					t.Fatalf("line %d of stats --watch -o json: %q", i, l)
				}
			}
		}
	})
}

// watch runs the command for about a second, interrupts it, and returns
// its standard output once it exited 0.
func watch(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := command(ctx, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("redelay %q interrupted: %v\nstderr:\n%s", args, err, errOut.String())
	}
	return out.String()
}
