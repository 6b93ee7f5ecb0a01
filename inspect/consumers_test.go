package inspect_test

import (
	"context"
	"errors"
	"os"
	"strconv"
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

// consumersOf lists the consumers of the queue name.
func consumersOf(t *testing.T, in *inspect.Inspector, name string) []inspect.Consumer {
	t.Helper()
	all, err := in.Consumers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []inspect.Consumer
	for _, c := range all {
		if c.Queue == name {
			out = append(out, c)
		}
	}
	return out
}

// TestConsumers: a running Consume is listed with its host, PID,
// concurrency, items in flight and start; it is gone once Consume
// returns. A record its process stopped refreshing (a crash) is not
// listed, and is swept.
func TestConsumers(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		for range 2 {
			if _, err := q.Offer(ctx, "v"); err != nil {
				t.Fatal(err)
			}
		}
		in := inspect.New(rdb)
		before := time.Now().Add(-time.Second)
		cctx, cancel := context.WithCancel(ctx)
		release := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- q.Consume(cctx, func(ctx context.Context, _ *blocking.Delivery[string]) error {
				<-release
				return nil
			}, blocking.WithConcurrency(3))
		}()
		var cs []inspect.Consumer
		redistest.WaitFor(t, 15*time.Second, "the consumer listed with 2 in flight", func() bool {
			cs = consumersOf(t, in, name)
			return len(cs) == 1 && cs[0].InFlight == 2
		})
		host, _ := os.Hostname()
		c := cs[0]
		if c.Host != host || c.PID != os.Getpid() || c.Concurrency != 3 {
			t.Errorf("consumer %+v, want host %s, PID %d, concurrency 3", c, host, os.Getpid())
		}
		if c.Started.Before(before) || c.Started.After(time.Now()) || c.LastSeen.Before(c.Started.Add(-time.Second)) {
			t.Errorf("consumer started %v, last seen %v", c.Started, c.LastSeen)
		}
		close(release)
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		if cs := consumersOf(t, in, name); len(cs) != 0 {
			t.Errorf("after Consume returned: %+v", cs)
		}
	})
}

// TestConsumersCrashed: the record of a process that stopped refreshing
// it is not listed, and the next consumer's sweep deletes it.
func TestConsumersCrashed(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	key := keys.ConsumersOf("")
	// Last seen two minutes ago by the server's clock.
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	stale := now.Add(-2 * time.Minute).UnixMilli()
	id := "crashed:" + name
	rec := `{"queue":"` + name + `","host":"gone","pid":1,"concurrency":1,"inflight":1,"started":"2026-01-01T00:00:00Z"}`
	if err := rdb.HSet(ctx, key, id, strconv.FormatInt(stale, 10)+" "+rec).Err(); err != nil {
		t.Fatal(err)
	}
	in := inspect.New(rdb)
	if cs := consumersOf(t, in, name); len(cs) != 0 {
		t.Fatalf("a consumer not seen for 2 minutes is listed: %+v", cs)
	}
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(cctx, func(context.Context, *blocking.Delivery[string]) error { return nil })
	}()
	redistest.WaitFor(t, 15*time.Second, "the stale record swept", func() bool {
		return rdb.HExists(ctx, key, id).Val() == false
	})
	cancel()
	<-done
}

// TestServer: the Redis page's figures come from INFO of every master.
func TestServer(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		s, err := inspect.New(rdb).Server(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		wantMode, wantMasters, wantAddr := "standalone", 1, ""
		switch c := rdb.(type) {
		case *redis.ClusterClient:
			wantMode, wantMasters, wantAddr = "cluster", 3, c.Options().Addrs[0]
		case *redis.Client:
			wantAddr = c.Options().Addr
		}
		if s.Mode != wantMode || s.Masters != wantMasters || s.Addr != wantAddr || s.Version == "" ||
			s.UsedMemory <= 0 || s.Clients <= 0 || s.Eviction != "noeviction" {
			t.Errorf("Server() = %+v, want mode %s, %d masters, address %s", s, wantMode, wantMasters, wantAddr)
		}
	})
}

// TestServerRefused: a user whose ACL refuses INFO gets an error that
// wraps ErrInfoRefused; other errors do not.
func TestServerRefused(t *testing.T) {
	ctx := context.Background()
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	if err := admin.Do(ctx, "ACL", "SETUSER", "viewer", "on", ">pw", "~*", "&*", "+@all", "-@dangerous").Err(); err != nil {
		t.Fatal(err)
	}
	viewer := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "viewer", Password: "pw"})
	t.Cleanup(func() { _ = viewer.Close() })
	if _, err := inspect.New(viewer).Server(ctx); !errors.Is(err, inspect.ErrInfoRefused) {
		t.Errorf("Server as a user without @dangerous: %v, want ErrInfoRefused", err)
	}
	if _, err := inspect.New(admin).Server(ctx); err != nil {
		t.Errorf("Server as the default user: %v", err)
	}
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = down.Close() })
	if _, err := inspect.New(down).Server(ctx); err == nil || errors.Is(err, inspect.ErrInfoRefused) {
		t.Errorf("Server of no server: %v, want an error other than ErrInfoRefused", err)
	}
}

// TestRunSchedule: running a schedule offers its value ready at once under
// a new ID and leaves the schedule as it was; Unschedule removes it.
func TestRunSchedule(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close() })
		if err := dq.Schedule(ctx, "nightly", "0 3 * * *", "report"); err != nil {
			t.Fatal(err)
		}
		in := inspect.New(rdb)
		before, err := in.Schedules(ctx, name)
		if err != nil || len(before) != 1 {
			t.Fatalf("Schedules: %v, %v", before, err)
		}
		id, err := in.RunSchedule(ctx, name, "nightly")
		if err != nil || !strings.HasPrefix(id, "nightly@run-") {
			t.Fatalf("RunSchedule: %q, %v", id, err)
		}
		it, err := in.Get(ctx, name, id)
		if err != nil || it.State != inspect.Ready || it.Value != "report" {
			t.Fatalf("the item run: %+v, %v", it, err)
		}
		if v, err := q.Take(ctx); err != nil || v != "report" {
			t.Fatalf("Take: %q, %v", v, err)
		}
		after, err := in.Schedules(ctx, name)
		if err != nil || len(after) != 1 || !after[0].Next.Equal(before[0].Next) {
			t.Fatalf("the schedule changed: %+v, was %+v (%v)", after, before, err)
		}
		if _, err := in.RunSchedule(ctx, name, "missing"); !errors.Is(err, inspect.ErrNotFound) {
			t.Fatalf("RunSchedule of no schedule: %v", err)
		}
		if ok, err := in.Unschedule(ctx, name, "nightly"); err != nil || !ok {
			t.Fatalf("Unschedule: %v, %v", ok, err)
		}
		if ok, err := in.Unschedule(ctx, name, "nightly"); err != nil || ok {
			t.Fatalf("Unschedule again: %v, %v", ok, err)
		}
		if ss, err := in.Schedules(ctx, name); err != nil || len(ss) != 0 {
			t.Fatalf("Schedules after Unschedule: %+v, %v", ss, err)
		}
	})
}
