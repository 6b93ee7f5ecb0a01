package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// --prefix makes every command see the queues of that key prefix only; a
// bad prefix is a usage error.
func TestPrefixFlag(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		conn := connFlags(t, rdb)
		name := redistest.QueueName(t)
		p := redistest.Prefix(t, rdb)
		q := blocking.New[string](rdb, name, blocking.WithPrefix(p))
		t.Cleanup(func() { _ = q.Close() })
		if _, _, err := q.Poll(ctx, 0); err != nil { // consumes: announces the queue
			t.Fatal(err)
		}
		if _, err := q.Offer(ctx, "hello", blocking.WithID("p-1")); err != nil {
			t.Fatal(err)
		}
		redistest.WaitFor(t, 5*time.Second, "the queue announced", func() bool {
			names, err := inspect.New(rdb, inspect.WithPrefix(p)).Queues(ctx)
			return err == nil && len(names) == 1
		})
		if out := ok(t, with(conn, "--prefix", p, "queues")...); !strings.Contains(out, name) {
			t.Errorf("queues --prefix %s: %q, want %s", p, out, name)
		}
		if out := ok(t, with(conn, "queues")...); strings.Contains(out, name) {
			t.Errorf("queues without --prefix lists %s", name)
		}
		if out := ok(t, with(conn, "--prefix", p, "get", name, "p-1")...); !strings.Contains(out, "hello") {
			t.Errorf("get --prefix: %q", out)
		}
		if r := cli(t, with(conn, "get", name, "p-1")...); r.code != 1 {
			t.Errorf("get without --prefix: %v, want exit 1 (no such queue)", r)
		}
		ok(t, with(conn, "--prefix", p, "pause", name)...)
		if st, err := q.Stats(ctx); err != nil || !st.Paused {
			t.Errorf("pause --prefix: %+v, %v", st, err)
		}
	})
	for _, bad := range []string{"", "a b", "x{y"} {
		if r := cli(t, "--prefix", bad, "queues"); r.code != 2 || !strings.Contains(r.stderr, "--prefix") {
			t.Errorf("--prefix %q: %v, want a usage error naming --prefix", bad, r)
		}
	}
}
