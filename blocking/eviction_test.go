package blocking_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
)

// Tests of defect 12 of the second attack round: a Redis that may evict
// loses acknowledged offers silently, and an offer refused for want of
// memory said it might have been stored.

// warnings counts the eviction warnings in logs.
func warnings(logs *redistest.Logs) int {
	return strings.Count(logs.String(), "maxmemory-policy noeviction")
}

// TestEvictionPolicy: the policy is read once per client, warned of once
// per client when it evicts (by a process that only offers, and by one
// that only consumes), and reported by Stats.
func TestEvictionPolicy(t *testing.T) {
	redistest.ForEachDedicated(t, func(t *testing.T, d *redistest.Dedicated) {
		for _, policy := range []string{"allkeys-lru", "volatile-lru", "noeviction"} {
			t.Run(policy, func(t *testing.T) {
				// On a Cluster, one master of three: a policy on any master counts.
				d.ConfigSetOne(t, "maxmemory-policy", policy)
				evicts := policy != "noeviction"
				ctx := context.Background()

				t.Run("producer", func(t *testing.T) {
					rdb := d.Client()
					infos := redistest.CountCommands(rdb, redistest.IsCommand("info"))
					logger, logs := redistest.CaptureLogs()
					q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithLogger(logger))
					defer q.Close()
					if _, err := q.Offer(ctx, "x"); err != nil {
						t.Fatal(err)
					}
					if evicts {
						redistest.WaitFor(t, 10*time.Second, "the warning", func() bool { return warnings(logs) > 0 })
						if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "maxmemory_policy="+policy) {
							t.Fatalf("the warning does not name %s at WARN:\n%s", policy, logs)
						}
					}
					st, err := q.Stats(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if st.Eviction != policy {
						t.Fatalf("Stats.Eviction %q, want %q", st.Eviction, policy)
					}
					// More queues and calls on the same client: no second
					// read, no second warning.
					q2 := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithLogger(logger))
					defer q2.Close()
					for range 3 {
						if _, err := q2.Offer(ctx, "y"); err != nil {
							t.Fatal(err)
						}
					}
					dl, err := q2.Receive(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if err := dl.Ack(ctx); err != nil {
						t.Fatal(err)
					}
					if st, err := q2.Stats(ctx); err != nil || st.Eviction != policy {
						t.Fatalf("second queue's Stats: %+v, %v", st, err)
					}
					want := 0
					if evicts {
						want = 1
					}
					if n := warnings(logs); n != want {
						t.Fatalf("%d warnings, want %d:\n%s", n, want, logs)
					}
					if n := infos.Load(); n != int64(len(d.Masters)) {
						t.Fatalf("%d INFO commands sent, want one per master (%d)", n, len(d.Masters))
					}
					t.Logf("policy %s: Stats.Eviction %q, %d warning(s), %d INFO command(s)", policy, st.Eviction, warnings(logs), infos.Load())
				})

				t.Run("consumer", func(t *testing.T) {
					logger, logs := redistest.CaptureLogs()
					q := blocking.New[string](d.Client(), redistest.QueueName(t), blocking.WithLogger(logger))
					defer q.Close()
					if _, _, err := q.Poll(ctx, 20*time.Millisecond); err != nil {
						t.Fatal(err)
					}
					if evicts {
						redistest.WaitFor(t, 10*time.Second, "the consumer's warning", func() bool { return warnings(logs) > 0 })
					} else {
						// The transfer runs once a sweep, and checks after a run.
						st, err := q.Stats(ctx)
						if err != nil || st.Eviction != policy {
							t.Fatalf("Stats: %+v, %v", st, err)
						}
						if n := warnings(logs); n != 0 {
							t.Fatalf("%d warnings for noeviction:\n%s", n, logs)
						}
					}
				})
			})
		}
	})
}

// TestEvictionPolicyRefusedByACL: a user allowed every command but the
// dangerous ones (INFO among them) works as before; the check is tried
// once, quietly, and the policy is unknown.
func TestEvictionPolicyRefusedByACL(t *testing.T) {
	srv := redistest.StartServer(t, redistest.WithArgs("--maxmemory-policy", "allkeys-lru"))
	ctx := context.Background()
	admin := srv.Client(t)
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">app-pass", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "app", Password: "app-pass"})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Info(ctx, "memory").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Fatalf("INFO as the user: %v; want NOPERM", err)
	}
	infos := redistest.CountCommands(rdb, redistest.IsCommand("info"))
	transfers := redistest.CountCommands(rdb, func(args []any) bool {
		return len(args) > 1 && args[0] == "evalsha" && args[1] == lua.Transfer.Hash()
	})
	logger, logs := redistest.CaptureLogs()
	q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithLogger(logger))
	defer q.Close()
	for range 3 {
		if _, err := q.Offer(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
	redistest.WaitFor(t, 10*time.Second, "the check", func() bool { return infos.Load() > 0 })
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Take(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Eviction != "" || st.Ready != 1 {
		t.Fatalf("Stats: %+v; want Ready 1 and Eviction unknown", st)
	}
	// Later transfer runs and a second queue do not ask again.
	runs := transfers.Load()
	redistest.WaitFor(t, 10*time.Second, "two more transfer runs", func() bool { return transfers.Load() >= runs+2 })
	q2 := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithLogger(logger))
	defer q2.Close()
	if _, err := q2.Offer(ctx, "y"); err != nil {
		t.Fatal(err)
	}
	if st, err := q2.Stats(ctx); err != nil || st.Eviction != "" {
		t.Fatalf("second queue's Stats: %+v, %v", st, err)
	}
	if n := infos.Load(); n != 1 {
		t.Fatalf("INFO tried %d times, want once", n)
	}
	if strings.Contains(logs.String(), "level=WARN") || strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("logged above INFO:\n%s", logs)
	}
	if n := strings.Count(logs.String(), "cannot read the Redis maxmemory-policy"); n != 1 {
		t.Fatalf("%d debug records of the refusal, want 1:\n%s", n, logs)
	}
	t.Logf("INFO tried %d time(s); Stats.Eviction %q; log:\n%s", infos.Load(), st.Eviction, logs)
}

// TestOfferOutOfMemory: an offer Redis refuses for want of memory returns
// no ID and an error wrapping ErrOutOfMemory that says it was not stored;
// nothing is half-written, and consumers drain the queue meanwhile.
func TestOfferOutOfMemory(t *testing.T) {
	redistest.ForEachDedicated(t, func(t *testing.T, d *redistest.Dedicated) {
		ctx := context.Background()
		rdb := d.Client()
		q := blocking.New[string](rdb, redistest.QueueName(t))
		defer q.Close()
		const stored = 6
		for i := range stored {
			if _, err := q.Offer(ctx, "item-"+strconv.Itoa(i)); err != nil {
				t.Fatal(err)
			}
		}
		d.OutOfMemory(t)
		for range 3 { // combined and alone, the same answer
			id, err := q.Offer(ctx, strings.Repeat("x", 1024))
			t.Logf("offer past maxmemory: id %q, err: %v", id, err)
			if id != "" || !errors.Is(err, blocking.ErrOutOfMemory) {
				t.Fatalf("offer past maxmemory: id %q, %v; want no ID and ErrOutOfMemory", id, err)
			}
			if !strings.Contains(err.Error(), "nothing was stored") || strings.Contains(err.Error(), "may have been stored") {
				t.Fatalf("the error does not say the item was not stored: %v", err)
			}
		}
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Ready != stored || st.Eviction != "noeviction" {
			t.Fatalf("Stats after the refused offers: %+v; want Ready %d, Eviction noeviction", st, stored)
		}
		// Consumers go on: Receive, Ack and Take need no memory.
		for range stored / 2 {
			dl, err := q.Receive(ctx)
			if err != nil {
				t.Fatalf("Receive past maxmemory: %v", err)
			}
			if err := dl.Ack(ctx); err != nil {
				t.Fatalf("Ack past maxmemory: %v", err)
			}
		}
		for range stored / 2 {
			if _, err := q.Take(ctx); err != nil {
				t.Fatalf("Take past maxmemory: %v", err)
			}
		}
		if st, err := q.Stats(ctx); err != nil || st.Ready != 0 || st.Inflight != 0 {
			t.Fatalf("Stats after draining: %+v, %v", st, err)
		}
	})
}
