package main

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/redistest"
)

// The command never uses KEYS or SCAN, as the inspector it works through
// does not: no command that reads (queues, stats, ls of one state or of
// every one, get, schedules, the completion of queue names) nor one that
// changes, reschedule's reading of the server's clock included, makes the
// servers run either (their command statistics count every command, those
// of scripts too).
func TestNoKeyspaceScan(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		runs := [][]string{
			{"queues"}, {"stats"}, {"stats", name}, {"schedules", name}, {"__complete", "stats", ""},
			{"get", name, "parcel-1"}, {"get", name, "dead-1"}, {"get", name, "dead-1", "-o", "json"},
			{"reschedule", name, "parcel-2", "10m"}, {"promote", name, "parcel-3"}, {"requeue", name, "dead-1"},
			{"requeue", name, "--all"}, {"cancel", name, "parcel-1"}, {"pause", name}, {"resume", name},
		}
		for _, st := range []string{"delayed", "retry", "ready", "inflight", "dead"} {
			runs = append(runs, []string{"ls", name, "-s", st}, []string{"ls", name, "-s", st, "-o", "json"})
		}
		runs = append(runs, []string{"ls", name}, []string{"ls", name, "-o", "json"}, []string{"purge", name, "-s", "ready", "--yes"})
		before := redistest.ReadCommandStats(t, rdb)
		for _, args := range runs {
			ok(t, with(conn, args...)...)
		}
		if r := cli(t, with(conn, "get", name, "missing")...); r.code != 1 {
			t.Fatalf("get of a missing item: %v", r)
		}
		after := redistest.ReadCommandStats(t, rdb)
		if after["evalsha"].Calls <= before["evalsha"].Calls {
			t.Fatal("no script call counted: the statistics are not the servers'")
		}
		for name, st := range after {
			if n := st.Calls - before[name].Calls; redistest.ScansKeyspace(name) && n != 0 {
				t.Errorf("%s run %d times while the commands ran", name, n)
			}
		}
	})
}
