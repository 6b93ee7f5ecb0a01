package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
)

// groups lists a queue's groups largest first, as a table and as JSON;
// pause-group and resume-group act on one group; bad input is a usage
// error.
func TestGroupsCommands(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		conn := connFlags(t, rdb)
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		for g, n := range map[string]int{"big": 3, "small": 1} {
			for i := range n {
				if _, err := q.Offer(ctx, fmt.Sprint(i), blocking.WithGroup(g)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := q.Offer(ctx, "plain"); err != nil { // the group "" from now on
			t.Fatal(err)
		}
		out := ok(t, with(conn, "groups", name)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 4 || strings.Join(strings.Fields(lines[0]), " ") != "GROUP READY INFLIGHT PAUSED" ||
			strings.Join(strings.Fields(lines[1]), " ") != "big 3 0" {
			t.Fatalf("groups printed:\n%s", out)
		}
		ok(t, with(conn, "pause-group", name, "big")...)
		var got []groupJSON
		if err := json.Unmarshal([]byte(ok(t, with(conn, "groups", name, "-o", "json", "--limit", "1")...)), &got); err != nil ||
			len(got) != 1 || got[0] != (groupJSON{Group: "big", Ready: 3, Paused: true}) {
			t.Fatalf("groups -o json = %+v, %v", got, err)
		}
		var ch changeJSON
		if err := json.Unmarshal([]byte(ok(t, with(conn, "resume-group", name, "big", "-o", "json")...)), &ch); err != nil ||
			ch.Action != "resumed" || ch.Group != "big" || ch.Paused == nil || *ch.Paused {
			t.Fatalf("resume-group -o json = %+v, %v", ch, err)
		}
		if gs, err := q.Groups(ctx, 0, 10); err != nil || gs[0].Paused {
			t.Fatalf("after resume-group: %+v, %v", gs, err)
		}
		for _, args := range [][]string{
			{"groups", name, "--limit", "0"},
			{"groups"},
			{"pause-group", name},
			{"pause-group", name, ""},
		} {
			if r := cli(t, with(conn, args...)...); r.code != 2 {
				t.Errorf("redelay %q: %v, want exit 2", args, r)
			}
		}
	})
}
