package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// import-zset moves a polled sorted set's members into a queue, with their
// scores as due times and the members as IDs and values, earliest first;
// a second run after an interrupted one moves the rest, each member once.
func TestImportZSet(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		conn := connFlags(t, rdb)
		name := redistest.QueueName(t)
		source := "{" + name + "}:poller"
		now := time.Now().Truncate(time.Millisecond)
		long := `{"job":"` + strings.Repeat("x", 300) + `"}`
		members := map[string]time.Time{
			`{"job":"past"}`:   now.Add(-time.Hour),
			`{"job":"soon"}`:   now.Add(time.Hour),
			`{"job":"later"}`:  now.Add(2 * time.Hour),
			long:               now.Add(3 * time.Hour),
			`{"job":"copied"}`: now.Add(4 * time.Hour),
		}
		for m, due := range members {
			if err := rdb.ZAdd(ctx, source, redis.Z{Score: float64(due.UnixMilli()), Member: m}).Err(); err != nil {
				t.Fatal(err)
			}
		}
		q := blocking.New[json.RawMessage](rdb, name, blocking.WithCodec(codec.JSON()))
		defer q.Close()
		dq := delayed.New(q, delayed.WithoutTransfer())
		defer dq.Close()
		// A run that stopped after this member's offer, before its removal.
		if _, err := dq.OfferAt(ctx, json.RawMessage(`{"job":"copied"}`), members[`{"job":"copied"}`], delayed.WithID(`{"job":"copied"}`)); err != nil {
			t.Fatal(err)
		}
		var got importJSON
		out := ok(t, with(conn, "import-zset", source, name, "--unit", "ms", "--batch", "2", "-o", "json")...)
		if err := json.Unmarshal([]byte(out), &got); err != nil || got != (importJSON{Source: source, Queue: name, Moved: 4, AlreadyPending: 1}) {
			t.Fatalf("import-zset -o json = %q: %+v, %v", out, got, err)
		}
		if n, err := rdb.ZCard(ctx, source).Result(); err != nil || n != 0 {
			t.Fatalf("%d members left in the source, %v", n, err)
		}
		sum := sha256.Sum256([]byte(long))
		for m, due := range members {
			id := m
			if m == long {
				id = "sha256:" + hex.EncodeToString(sum[:])
			}
			if due.Before(now) {
				continue // due already: ready, checked below
			}
			it, err := dq.Get(ctx, id)
			if err != nil {
				t.Fatalf("Get(%q): %v", id, err)
			}
			if string(it.Value) != m || !it.DueAt.Equal(due.Truncate(time.Millisecond)) {
				t.Fatalf("item %q = %s due %v, want %s due %v", id, it.Value, it.DueAt, m, due.Truncate(time.Millisecond))
			}
		}
		if n, err := dq.Size(ctx); err != nil || n != 4 {
			t.Fatalf("%d items pending, %v; want 4", n, err)
		}
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if v, err := q.Take(tctx); err != nil || string(v) != `{"job":"past"}` {
			t.Fatalf("the member already due: Take = %s, %v", v, err)
		}
		if out := ok(t, with(conn, "import-zset", source, name)...); !strings.Contains(out, "moved 0 members") {
			t.Fatalf("a second run printed %q", out)
		}
		for _, args := range [][]string{
			{"import-zset", source, name, "--unit", "h"},
			{"import-zset", source, name, "--batch", "0"},
			{"import-zset", source},
			{"import-zset", source, "bad{name"},
		} {
			if r := cli(t, with(conn, args...)...); r.code != exitUsage {
				t.Errorf("redelay %q: exit %d, want %d (usage)\n%v", args, r.code, exitUsage, r)
			}
		}
	})
}
