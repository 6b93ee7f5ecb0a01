package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// The inspector never uses KEYS or SCAN, as its documentation says: no
// call of any of its methods, on a queue with an item in every state and
// a schedule, partitioned or not, sends either (its client's hook sees
// every command), nor makes a script run either (the servers' command
// statistics count those). HSCAN, SSCAN and ZSCAN, which walk one key,
// are not keyspace scans (redistest.ScansKeyspace).
func TestNoKeyspaceScan(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, parts := range []int{1, 4} {
			t.Run(fmt.Sprintf("partitions-%d", parts), func(t *testing.T) {
				ctx := context.Background()
				f := populate(t, rdb, blocking.WithPartitions(parts))
				dq := delayed.New(f.q, delayed.WithoutTransfer())
				t.Cleanup(func() { _ = dq.Close() })
				if err := dq.Schedule(ctx, "nightly", "0 3 * * *", order("nightly")); err != nil {
					t.Fatal(err)
				}
				log := &redistest.CommandLog{}
				client := redistest.NewClientLike(t, rdb)
				client.AddHook(log)
				if cc, ok := client.(*redis.ClusterClient); ok {
					// What it sends to every master (INFO) goes through
					// its node clients.
					cc.OnNewNode(func(n *redis.Client) { n.AddHook(log) })
				}
				in := inspect.New(client)
				missing := redistest.QueueName(t)
				type call struct {
					method string
					do     func() error
				}
				calls := []call{
					// First: the client's first reading of the server's
					// policy (INFO); the calls after it share the reading.
					{"Eviction", func() error { _, err := in.Eviction(ctx); return err }},
					{"Queues", func() error { _, err := in.Queues(ctx); return err }},
					{"Stats", func() error { _, err := in.Stats(ctx, f.name); return err }},
					{"Schedules", func() error { _, err := in.Schedules(ctx, f.name); return err }},
					{"History", func() error { _, err := in.History(ctx, f.name, time.Time{}); return err }},
					{"Consumers", func() error { _, err := in.Consumers(ctx); return err }},
					{"AllStats", func() error { _, err := in.AllStats(ctx); return err }},
					{"Server", func() error { _, err := in.Server(ctx); return err }},
					{"RunSchedule", func() error { _, err := in.RunSchedule(ctx, f.name, "nightly"); return err }},
				}
				for _, st := range inspect.States() {
					calls = append(calls, call{"List", func() error { _, err := in.List(ctx, f.name, st, 0, inspect.MaxPage); return err }})
				}
				for _, it := range fixtureItems {
					calls = append(calls, call{"Get", func() error { _, err := in.Get(ctx, f.name, it.id); return err }})
				}
				calls = append(calls,
					// Not found: every state searched, and a queue that
					// does not exist.
					call{"Get", func() error { return notFound(in.Get(ctx, f.name, "missing")) }},
					call{"List", func() error { return notFound(in.List(ctx, missing, inspect.Ready, 0, 10)) }},
					call{"Promote", func() error { return in.Promote(ctx, f.name, "o-delayed") }},
					call{"Reschedule", func() error { return in.Reschedule(ctx, f.name, "o-retry", time.Now().Add(2*time.Hour)) }},
					call{"Requeue", func() error { return in.Requeue(ctx, f.name, "o-dead") }},
					call{"RequeueAll", func() error { _, err := in.RequeueAll(ctx, f.name); return err }},
					call{"Delete", func() error { return in.Delete(ctx, f.name, "o-inflight") }},
					call{"Pause", func() error { return in.Pause(ctx, f.name) }},
					call{"Resume", func() error { return in.Resume(ctx, f.name) }},
					call{"Unschedule", func() error { _, err := in.Unschedule(ctx, f.name, "nightly"); return err }},
					call{"Groups", func() error { _, err := in.Groups(ctx, f.name, 0, 10); return err }},
					call{"PauseGroup", func() error { return in.PauseGroup(ctx, f.name, "g") }},
					call{"ResumeGroup", func() error { return in.ResumeGroup(ctx, f.name, "g") }},
					call{"PurgeGroup", func() error { _, err := in.PurgeGroup(ctx, f.name, "g"); return err }},
					call{"Forget", func() error { return wantNotEmpty(in.Forget(ctx, f.name)) }}, // it holds items
				)
				for _, st := range inspect.States() {
					calls = append(calls, call{"Purge", func() error { _, err := in.Purge(ctx, f.name, st); return err }})
				}
				typ := reflect.TypeFor[*inspect.Inspector]()
				for i := range typ.NumMethod() {
					m := typ.Method(i).Name
					local := m == "Err" || m == "Prefix" // no network call
					if !local && !slices.ContainsFunc(calls, func(c call) bool { return c.method == m }) {
						t.Errorf("Inspector.%s is not called here: add its calls", m)
					}
				}

				before := redistest.ReadCommandStats(t, rdb)
				for _, c := range calls {
					log.Take()
					if err := c.do(); err != nil {
						t.Fatalf("%s: %v", c.method, err)
					}
					sent := log.Take()
					if len(sent) == 0 {
						t.Fatalf("%s: no command recorded", c.method)
					}
					for _, name := range sent {
						if redistest.ScansKeyspace(name) {
							t.Errorf("%s sent %s: %q", c.method, name, sent)
						}
					}
				}
				after := redistest.ReadCommandStats(t, rdb)
				if after["evalsha"].Calls <= before["evalsha"].Calls {
					t.Fatal("no script call counted: the statistics are not the servers'")
				}
				for name, st := range after {
					if n := st.Calls - before[name].Calls; redistest.ScansKeyspace(name) && n != 0 {
						t.Errorf("%s run %d times while the inspector was called", name, n)
					}
				}
			})
		}
	})
}

// notFound returns nil when err is ErrNotFound, else an error saying what
// the call returned.
func notFound[T any](_ T, err error) error {
	if errors.Is(err, inspect.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("want ErrNotFound, got %v", err)
}

// wantNotEmpty turns the ErrNotEmpty a call is expected to return into
// nil, and anything else into an error.
func wantNotEmpty(err error) error {
	if errors.Is(err, inspect.ErrNotEmpty) {
		return nil
	}
	return fmt.Errorf("want ErrNotEmpty, got %v", err)
}
