package dashboard_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// A queue's page lists its largest groups with their counts; Pause asks
// first, then pauses the group alone; Resume undoes it.
func TestGroupsOnQueuePage(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		for g, n := range map[string]int{"tenant-a": 3, "tenant-<b>": 1} {
			for i := range n {
				if _, err := q.Offer(ctx, fmt.Sprint(i), blocking.WithGroup(g)); err != nil {
					t.Fatal(err)
				}
			}
		}
		in := inspect.New(rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("queue?q=" + url.QueryEscape(name) + "&state=ready")
		table := section(p.body, "table", `data-testid="groups"`)
		if !strings.Contains(table, `data-group="tenant-a"`) || !strings.Contains(table, "tenant-&lt;b&gt;") {
			t.Fatalf("groups table:\n%s", table)
		}
		if i, j := strings.Index(table, "tenant-a"), strings.Index(table, "tenant-&lt;b&gt;"); i > j {
			t.Errorf("the largest group is not first:\n%s", table)
		}
		// The ready tab lists the items held in groups.
		if n := strings.Count(p.body, `data-testid="item-row"`); n != 4 {
			t.Errorf("ready tab lists %d items, want 4", n)
		}

		row := section(p.body, "tr", `data-testid="group-row" data-group="tenant-a"`)
		c := b.submit(p, row, "group-pause", nil)
		if gs, err := in.Groups(ctx, name, 0, 10); err != nil || gs[0].Paused {
			t.Fatalf("paused before confirming: %+v, %v", gs, err)
		}
		p = b.followRedirect(wantConfirm(t, b, c, fmt.Sprintf("Pause group %q of queue %q?", "tenant-a", name)))
		wantFlash(t, p, `Paused group "tenant-a"`)
		gs, err := in.Groups(ctx, name, 0, 10)
		if err != nil || len(gs) != 2 || gs[0] != (inspect.Group{Key: "tenant-a", Ready: 3, Paused: true}) {
			t.Fatalf("after pause: %+v, %v", gs, err)
		}
		if v, err := q.Take(ctx); err != nil || v != "0" {
			t.Fatalf("Take = %q, %v", v, err)
		}
		if gs, _ := in.Groups(ctx, name, 0, 10); len(gs) != 1 || gs[0].Key != "tenant-a" {
			t.Fatalf("the other group was not served: %+v", gs)
		}

		row = section(p.body, "tr", `data-testid="group-row" data-group="tenant-a"`)
		if !strings.Contains(row, `data-testid="group-paused"`) {
			t.Errorf("no paused badge:\n%s", row)
		}
		p = b.followRedirect(b.submit(p, row, "group-resume", nil))
		wantFlash(t, p, `Resumed group "tenant-a"`)
		if gs, err := in.Groups(ctx, name, 0, 10); err != nil || gs[0].Paused {
			t.Fatalf("after resume: %+v, %v", gs, err)
		}
	})
}
