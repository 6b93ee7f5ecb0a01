package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// consumers lists the processes consuming a queue, as a table and as
// JSON; with a queue name, only that queue's.
func TestConsumers(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		conn := connFlags(t, rdb)
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- q.Consume(cctx, func(context.Context, *blocking.Delivery[string]) error { return nil }, blocking.WithConcurrency(4))
		}()
		defer func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		}()
		in := inspect.New(rdb)
		redistest.WaitFor(t, 15*time.Second, "the consumer recorded", func() bool {
			cs, err := in.Consumers(ctx)
			for _, c := range cs {
				if c.Queue == name {
					return true
				}
			}
			return err != nil
		})
		out := ok(t, with(conn, "consumers", name)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "QUEUE") {
			t.Fatalf("consumers %s printed:\n%s", name, out)
		}
		host, _ := os.Hostname()
		if f := strings.Fields(lines[1]); len(f) != 7 || f[0] != name || f[1] != host || f[2] != strconv.Itoa(os.Getpid()) || f[3] != "4" {
			t.Fatalf("consumers row %q", lines[1])
		}
		var got []map[string]any
		if err := json.Unmarshal([]byte(ok(t, with(conn, "consumers", name, "-o", "json")...)), &got); err != nil || len(got) != 1 ||
			got[0]["queue"] != name || got[0]["pid"] != float64(os.Getpid()) || got[0]["concurrency"] != float64(4) {
			t.Fatalf("consumers -o json: %v, %v", got, err)
		}
		if out := ok(t, with(conn, "consumers", name+"-other")...); strings.Contains(out, name+" ") {
			t.Fatalf("consumers of another queue lists %s:\n%s", name, out)
		}
	})
}
