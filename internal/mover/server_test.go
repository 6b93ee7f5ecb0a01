package mover_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// TestServerPolicyRecheck: a reading of the eviction policy is used until
// it is old, then read again: a changed policy is reported and warned of
// (again after it was noeviction), the same one is not warned of twice.
// A reading made without a logger (Stats) leaves the warning to the next
// check that has one, which reads nothing.
func TestServerPolicyRecheck(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	infos := redistest.CountCommands(rdb, redistest.IsCommand("info"))
	ctx := context.Background()
	c := store.New(rdb)
	s := mover.ServerOf(rdb)
	if mover.ServerOf(rdb) != s {
		t.Fatal("two records for one client")
	}
	logger, logs := redistest.CaptureLogs()
	warned := func() int { return strings.Count(logs.String(), "level=WARN") }
	set := func(policy string) {
		redistest.ConfigSet(t, rdb, "maxmemory-policy", policy)
		s.Expire()
	}
	check := func(want string, warnings int) {
		t.Helper()
		if !s.Claim() {
			t.Fatal("no check due")
		}
		s.Check(ctx, c, logger)
		if got := s.Known(); got != want {
			t.Fatalf("policy %q, want %q", got, want)
		}
		if warned() != warnings {
			t.Fatalf("%d warnings, want %d:\n%s", warned(), warnings, logs)
		}
		if s.Claim() {
			t.Fatal("a check due right after one")
		}
	}
	check("noeviction", 0)
	set("allkeys-lru")
	check("allkeys-lru", 1)
	s.Expire()
	check("allkeys-lru", 1)
	set("volatile-lru")
	check("volatile-lru", 2)
	set("noeviction")
	check("noeviction", 2)
	set("volatile-lru")
	check("volatile-lru", 3)
	if n := infos.Load(); n != 6 {
		t.Fatalf("%d INFO commands for 6 readings", n)
	}

	// Stats first: no warning, one owed to the next check with a logger.
	other := srv.Client(t)
	infos = redistest.CountCommands(other, redistest.IsCommand("info"))
	s2 := mover.ServerOf(other)
	if got := s2.Eviction(ctx, store.New(other)); got != "volatile-lru" {
		t.Fatalf("Eviction %q", got)
	}
	if !s2.Claim() {
		t.Fatal("no check due with a warning owed")
	}
	s2.Check(ctx, store.New(other), logger)
	if warned() != 4 || infos.Load() != 1 {
		t.Fatalf("%d warnings (want 4), %d INFO commands (want 1)", warned(), infos.Load())
	}
	t.Logf("log:\n%s", logs)
}

// TestServerRecordForgotten: the record of a client goes when the client
// is garbage collected.
func TestServerRecordForgotten(t *testing.T) {
	var client weak.Pointer[redis.Client]
	func() {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		defer rdb.Close()
		client = weak.Make(rdb)
		_ = mover.ServerOf(rdb)
		if !mover.HasServerRecord(client) {
			t.Fatal("no record for the client")
		}
	}()
	redistest.WaitFor(t, 10*time.Second, "the record forgotten", func() bool {
		runtime.GC()
		return !mover.HasServerRecord(client)
	})
	if client.Value() != nil {
		t.Fatal("the record was forgotten before its client was collected")
	}
}
