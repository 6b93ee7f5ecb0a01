package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// cancel, reschedule, promote, requeue, pause and resume change what the
// inspector then reads, and say what they did.
func TestChanges(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		in := inspect.New(rdb)
		get := func(id string) inspect.Item {
			t.Helper()
			it, err := in.Get(ctx, name, id)
			if err != nil {
				t.Fatalf("Get %s: %v", id, err)
			}
			return it
		}

		if out := ok(t, with(conn, "cancel", name, "parcel-1")...); out != `cancelled "parcel-1" of queue "`+name+"\"\n" {
			t.Fatalf("cancel printed %q", out)
		}
		if r := cli(t, with(conn, "get", name, "parcel-1")...); r.code != 1 {
			t.Fatalf("get of a cancelled item: %v", r)
		}

		before := time.Now()
		ok(t, with(conn, "reschedule", name, "parcel-2", "10m")...)
		if due := get("parcel-2").DueAt; due.Before(before.Add(9*time.Minute)) || due.After(time.Now().Add(11*time.Minute)) {
			t.Fatalf("rescheduled 10m from %v: due %v", before, due)
		}
		var ch map[string]any
		decode(t, ok(t, with(conn, "reschedule", name, "parcel-2", "2099-06-01T12:00:00.5+02:00", "-o", "json")...), &ch)
		at := time.Date(2099, 6, 1, 10, 0, 0, 5e8, time.UTC)
		if !get("parcel-2").DueAt.Equal(at) || ch["due_at"] != "2099-06-01T10:00:00.5Z" || ch["action"] != "rescheduled" || ch["id"] != "parcel-2" {
			t.Fatalf("rescheduled to %v: due %v, printed %v", at, get("parcel-2").DueAt, ch)
		}

		// A time that has passed is refused, saying how to keep it; with
		// --allow-past the item is ready at once.
		r := cli(t, with(conn, "reschedule", name, "parcel-2", "2020-01-01T00:00:00Z")...)
		if r.code != 2 || !strings.Contains(r.stderr, "has passed") || !strings.Contains(r.stderr, "--allow-past") || !get("parcel-2").DueAt.Equal(at) {
			t.Fatalf("reschedule to 2020: %v; parcel-2 due %v", r, get("parcel-2").DueAt)
		}
		ok(t, with(conn, "reschedule", name, "parcel-2", "2020-01-01T00:00:00Z", "--allow-past")...)
		redistest.WaitFor(t, 5*time.Second, "parcel-2 ready", func() bool { return get("parcel-2").State == inspect.Ready })

		ok(t, with(conn, "promote", name, "parcel-3")...)
		redistest.WaitFor(t, 5*time.Second, "parcel-3 ready", func() bool { return get("parcel-3").State == inspect.Ready })

		ok(t, with(conn, "requeue", name, "dead-1")...)
		if st := get("dead-1").State; st != inspect.Ready {
			t.Fatalf("requeued dead-1 is %s", st)
		}
		decode(t, ok(t, with(conn, "requeue", name, "--all", "-o", "json")...), &ch)
		if ch["count"] != 1.0 || ch["action"] != "requeued" {
			t.Fatalf("requeue --all printed %v", ch)
		}
		if st := get("dead-2").State; st != inspect.Ready {
			t.Fatalf("dead-2 after requeue --all is %s", st)
		}

		if out := ok(t, with(conn, "pause", name)...); out != `paused queue "`+name+"\"\n" {
			t.Fatalf("pause printed %q", out)
		}
		if st, err := in.Stats(ctx, name); err != nil || !st.Paused {
			t.Fatalf("after pause: %+v, %v", st, err)
		}
		decode(t, ok(t, with(conn, "resume", name, "-o", "json")...), &ch)
		if ch["paused"] != false || ch["action"] != "resumed" || ch["queue"] != name {
			t.Fatalf("resume -o json printed %v", ch)
		}
		if st, err := in.Stats(ctx, name); err != nil || st.Paused {
			t.Fatalf("after resume: %+v, %v", st, err)
		}
	})
}

// purge asks first: anything but y or yes purges nothing and exits 1;
// --yes does not ask.
func TestPurge(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		in := inspect.New(rdb)
		dead := func() int64 {
			t.Helper()
			st, err := in.Stats(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			return st.Dead
		}
		for _, answer := range []string{"n\n", "\n", "", "yess\n", "no"} {
			r := cliIn(t, answer, with(conn, "purge", name, "--state", "dead")...)
			if r.code != 1 || !strings.Contains(r.stderr, "Purge 2 dead items of "+name+"? [y/N] ") ||
				!strings.HasSuffix(r.stderr, "redelay: aborted\n") || r.stdout != "" {
				t.Fatalf("purge answered %q: %v", answer, r)
			}
			if n := dead(); n != 2 {
				t.Fatalf("purge answered %q: %d dead letters left, want 2", answer, n)
			}
		}
		r := cliIn(t, "y\n", with(conn, "purge", name, "--state", "dead")...)
		if r.code != 0 || r.stdout != `purged 2 dead items of queue "`+name+"\"\n" {
			t.Fatalf("purge answered y: %v", r)
		}
		if n := dead(); n != 0 {
			t.Fatalf("after purge: %d dead letters", n)
		}
		var ch map[string]any
		decode(t, ok(t, with(conn, "purge", name, "-s", "delayed", "--yes", "-o", "json")...), &ch)
		if ch["count"] != 3.0 || ch["state"] != "delayed" || ch["action"] != "purged" {
			t.Fatalf("purge --yes -o json printed %v", ch)
		}
		r = cliIn(t, "YES\n", with(conn, "purge", name, "--state", "delayed")...)
		if r.code != 0 || r.stdout != `purged 0 delayed items of queue "`+name+"\"\n" {
			t.Fatalf("purge of nothing answered YES: %v", r)
		}
	})
}

// forget refuses a queue that holds items, then, once it is purged,
// removes it from the registry.
func TestForget(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		if r := cli(t, with(conn, "forget", name)...); r.code != 1 || !strings.Contains(r.stderr, "purge") {
			t.Fatalf("forget of a queue holding items: %v", r)
		}
		for _, st := range []string{"delayed", "dead"} {
			ok(t, with(conn, "purge", name, "--state", st, "--yes")...)
		}
		if out := ok(t, with(conn, "forget", name)...); out != `forgot queue "`+name+"\"\n" {
			t.Fatalf("forget printed %q", out)
		}
		if out := ok(t, with(conn, "queues")...); strings.Contains(out, name) {
			t.Fatalf("queues lists %s after forget:\n%s", name, out)
		}
	})
}
