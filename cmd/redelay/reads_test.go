package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// The tables of queues, stats, ls and get, on a standalone server and on
// a Cluster: the same golden output from both.
func TestReadTables(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)
		if out := ok(t, with(conn, "queues")...); !slices.Contains(strings.Split(out, "\n"), name) {
			t.Fatalf("queues does not list %s:\n%s", name, out)
		}
		one := ok(t, with(conn, "stats", name)...)
		golden(t, "stats.golden", normalise(one, name, fixturePrefix))
		all := ok(t, with(conn, "stats")...)
		row := strings.Split(one, "\n")[1]
		if !strings.HasPrefix(all, "QUEUE ") || !strings.Contains(strings.Join(strings.Fields(all), " "), strings.Join(strings.Fields(row), " ")) {
			t.Fatalf("stats of every queue has no row %q:\n%s", row, all)
		}
		for _, c := range []struct{ file, state string }{
			{"ls-delayed.golden", "delayed"},
			{"ls-dead.golden", "dead"},
			{"ls-ready.golden", "Ready"},
		} {
			out := ok(t, with(conn, "ls", name, "--state", c.state)...)
			golden(t, c.file, normalise(out, name, fixturePrefix))
		}
		page := ok(t, with(conn, "ls", name, "-s", "delayed", "--limit", "1", "--offset", "1")...)
		if lines := strings.Split(strings.TrimSpace(page), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[1], "parcel-2 ") {
			t.Fatalf("ls --limit 1 --offset 1:\n%s", page)
		}
		for _, c := range []struct{ file, id string }{
			{"get-delayed.golden", "parcel-3"},
			{"get-dead.golden", "dead-2"},
		} {
			out := ok(t, with(conn, "get", name, c.id)...)
			golden(t, c.file, normalise(out, name, fixturePrefix))
		}
	})
}

// -o json: stable snake_case names, times in RFC 3339 (omitted when
// zero), durations in milliseconds.
func TestReadJSON(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		conn := connFlags(t, rdb)
		name := fixture(t, rdb)

		var queues []map[string]any
		decode(t, ok(t, with(conn, "queues", "-o", "json")...), &queues)
		if !slices.ContainsFunc(queues, func(q map[string]any) bool { return q["name"] == name }) {
			t.Fatalf("queues -o json has no %s: %v", name, queues)
		}

		var stats []map[string]any
		decode(t, ok(t, with(conn, "stats", name, "-o", "json")...), &stats)
		if len(stats) != 1 {
			t.Fatalf("stats -o json: %v", stats)
		}
		want := map[string]any{
			"queue": name, "delayed": 3.0, "retry": 0.0, "ready": 0.0, "inflight": 0.0, "dead": 2.0,
			"paused": false, "latency_ms": 0.0, "next_due": "2099-01-02T03:04:05Z", "eviction": "noeviction",
			"processed": 0.0, "failed": 2.0,
		}
		if !equalJSON(stats[0], want) {
			t.Fatalf("stats -o json = %v, want %v", stats[0], want)
		}

		var items []struct {
			ID            string            `json:"id"`
			State         string            `json:"state"`
			Attempt       int               `json:"attempt"`
			Priority      int               `json:"priority"`
			EnqueuedAt    time.Time         `json:"enqueued_at"`
			DueAt         time.Time         `json:"due_at"`
			Headers       map[string]string `json:"headers"`
			Value         map[string]any    `json:"value"`
			PayloadBase64 []byte            `json:"payload_base64"`
		}
		decode(t, ok(t, with(conn, "ls", name, "--state", "delayed", "-o", "json")...), &items)
		if len(items) != 3 {
			t.Fatalf("ls -o json: %d items", len(items))
		}
		it := items[1]
		if it.ID != "parcel-2" || it.State != "delayed" || it.Priority != 5 || !it.DueAt.Equal(fixtureDue.Add(time.Hour)) ||
			it.EnqueuedAt.IsZero() || it.Value["sku"] != "sku-2" || it.Value["qty"] != 1.0 || len(it.PayloadBase64) == 0 {
			t.Fatalf("ls -o json, second item: %+v", it)
		}

		var dead map[string]any
		decode(t, ok(t, with(conn, "get", name, "dead-1", "-o", "json")...), &dead)
		keys := []string{"id", "state", "attempt", "priority", "enqueued_at", "due_at", "expired", "headers", "error", "value", "payload_base64",
			"dead_at", "errors"}
		if got := sortedKeys(dead); !slices.Equal(got, sorted(keys)) {
			t.Fatalf("get -o json of a dead letter has the fields %v, want %v", got, sorted(keys))
		}
		if errs, _ := dead["errors"].([]any); len(errs) != 1 || errs[0] != "carrier: address not found" || dead["attempt"] != 1.0 {
			t.Fatalf("get -o json of a dead letter: errors %v, attempt %v", dead["errors"], dead["attempt"])
		}
		if dead["state"] != "dead" || !strings.Contains(dead["error"].(string), "carrier: address not found") ||
			dead["headers"].(map[string]any)[blocking.HeaderError] != dead["error"] {
			t.Fatalf("get -o json of a dead letter: %v", dead)
		}
	})
}

// schedules lists a queue's recurring schedules.
func TestSchedules(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		conn := connFlags(t, rdb)
		const prefix = "reports"
		name := goldenName(prefix)
		dq := delayed.New(blocking.New[string](rdb, name), delayed.WithoutTransfer())
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []struct {
			name, spec string
			opts       []delayed.ScheduleOption
		}{
			{"nightly", "0 3 * * *", nil},
			{"weekly", "0 3 * * 1", []delayed.ScheduleOption{delayed.WithMissedTicks(delayed.MissedSkip)}},
			{"yearly", "@yearly", []delayed.ScheduleOption{delayed.WithTimeZone(berlin), delayed.WithMissedTicks(delayed.MissedAll)}},
		} {
			if err := dq.Schedule(ctx, s.name, s.spec, s.name, s.opts...); err != nil {
				t.Fatal(err)
			}
		}
		// No process transfers the queue: a tick whose time passed is
		// flagged.
		seedtest.OverdueSchedule(t, rdb, name, "weekly")
		out := ok(t, with(conn, "schedules", name)...)
		golden(t, "schedules.golden", normalise(out, name, prefix))

		var infos []map[string]any
		decode(t, ok(t, with(conn, "schedules", name, "-o", "json")...), &infos)
		if len(infos) != 3 || infos[0]["name"] != "nightly" || infos[0]["spec"] != "0 3 * * *" || infos[2]["name"] != "yearly" {
			t.Fatalf("schedules -o json: %v", infos)
		}
		for i, w := range []struct {
			zone, missed string
			overdue      bool
		}{{"UTC", "latest", false}, {"UTC", "skip", true}, {"Europe/Berlin", "all", false}} {
			if infos[i]["zone"] != w.zone || infos[i]["missed"] != w.missed || infos[i]["overdue"] != w.overdue {
				t.Errorf("schedules -o json: %v; want zone %s, missed %s, overdue %v", infos[i], w.zone, w.missed, w.overdue)
			}
		}
		next, err := time.Parse(time.RFC3339Nano, infos[0]["next"].(string))
		if err != nil || next.Hour() != 3 || time.Until(next) > 25*time.Hour || time.Until(next) < 0 {
			t.Fatalf("next tick of nightly: %v, %v", infos[0]["next"], err)
		}
		if _, ok := infos[0]["last"]; ok {
			t.Fatalf("a schedule that never fired has a last tick: %v", infos[0])
		}

		// Run one now, then remove another.
		var ran map[string]any
		decode(t, ok(t, with(conn, "run-schedule", name, "nightly", "-o", "json")...), &ran)
		id, _ := ran["id"].(string)
		if ran["action"] != "ran" || ran["schedule"] != "nightly" || !strings.HasPrefix(id, "nightly@run-") {
			t.Fatalf("run-schedule -o json: %v", ran)
		}
		if out := ok(t, with(conn, "get", name, id)...); !strings.Contains(out, "STATE           ready") {
			t.Fatalf("get %s:\n%s", id, out)
		}
		if out := ok(t, with(conn, "unschedule", name, "weekly")...); out != `unscheduled "weekly" of queue "`+name+"\"\n" {
			t.Fatalf("unschedule printed %q", out)
		}
		for _, args := range [][]string{{"unschedule", name, "weekly"}, {"run-schedule", name, "weekly"}} {
			if r := cli(t, with(conn, args...)...); r.code != 1 {
				t.Fatalf("%q of a removed schedule: %v", args, r)
			}
		}
		decode(t, ok(t, with(conn, "schedules", name, "-o", "json")...), &infos)
		if len(infos) != 2 || infos[0]["name"] != "nightly" || infos[1]["name"] != "yearly" {
			t.Fatalf("schedules after unschedule: %v", infos)
		}
	})
}

// decode decodes the JSON out into v, failing the test if it cannot.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
}

// equalJSON reports whether two decoded JSON objects are equal.
func equalJSON(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// sortedKeys returns the keys of m in order.
func sortedKeys(m map[string]any) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return sorted(keys)
}

// sorted returns s sorted.
func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
