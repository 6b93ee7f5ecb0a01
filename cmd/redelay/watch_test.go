package main

import (
	"bufio"
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
			if len(lines) != 2 || !strings.HasSuffix(strings.Join(strings.Fields(lines[0]), " "), "NEXT-DUE PROCESSED FAILED READY/S DEAD/S") {
				t.Fatalf("table %d:\n%s", i, table)
			}
			fields := strings.Fields(lines[1])
			switch {
			case i == 0 && len(fields) != 11:
				t.Fatalf("first table has rates:\n%s", table)
			case i > 0 && (len(fields) != 13 || !strings.HasPrefix(fields[11], "+") || fields[12] != "0"):
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

// stats --watch never shows stale figures as live: while Redis cannot be
// reached, each sample says since when, and the figures of the last good
// sample are marked as such; it recovers by itself.
func TestStatsWatchStale(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	q := blocking.New[parcel](rdb, "stale")
	defer q.Close()
	if _, err := q.Offer(context.Background(), parcel{SKU: "a", Qty: 1}); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"json", "table"} {
		t.Run(mode, func(t *testing.T) {
			// Every queue: after the restart (without data) none is left,
			// and an empty table is live.
			args := []string{"--redis", "redis://" + srv.Addr(), "--timeout", "1s", "stats", "--watch", "--interval", "200ms"}
			if mode == "json" {
				args = append(args, "-o", "json")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := command(ctx, args...)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 1000)
			go func() {
				defer close(lines)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					lines <- sc.Text()
				}
			}()
			await := func(what string, ok func(string) bool) string {
				t.Helper()
				for {
					select {
					case l, open := <-lines:
						if !open {
							t.Fatalf("stats --watch ended before %s", what)
						}
						if ok(l) {
							return l
						}
					case <-ctx.Done():
						t.Fatalf("no %s", what)
					}
				}
			}
			live := func(l string) bool {
				return strings.HasPrefix(l, `{"time"`) && strings.Contains(l, `"queues"`) || strings.HasPrefix(l, "QUEUE ")
			}
			await("a first sample", live)
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			stale := await("a stale sample", func(l string) bool {
				return strings.Contains(l, "unreachable_since") || strings.HasPrefix(l, "STALE: Redis unreachable since ")
			})
			if mode == "table" && !strings.Contains(stale, "the last figures, above, are from") {
				t.Errorf("stale line %q", stale)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			await("a live sample after the restart", live)
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			for range lines {
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("stats --watch: %v", err)
			}
		})
	}
}
