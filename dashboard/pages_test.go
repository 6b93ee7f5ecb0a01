package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// Each state's tab lists that state's item with its row, value and
// actions; the active tab is marked.
func TestQueuePageStates(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		wantActions := map[inspect.State][]string{
			inspect.Delayed:  {"action-cancel", "action-promote", "action-reschedule"},
			inspect.Retry:    {"action-cancel", "action-promote", "action-reschedule"},
			inspect.Ready:    {"action-cancel"},
			inspect.Inflight: {"action-cancel"},
			inspect.Dead:     {"action-cancel", "action-requeue"},
		}
		for _, st := range inspect.States() {
			p := b.get("queue?q=" + url.QueryEscape(f.name) + "&state=" + string(st))
			wantStatus(t, p, http.StatusOK)
			id := "o-" + string(st)
			if got := itemIDs(p.body); !slices.Equal(got, []string{id}) {
				t.Errorf("%s: rows %q, want %s", st, got, id)
			}
			row := itemRow(p.body, id)
			if payload, _ := cell(row, "payload"); !strings.Contains(payload, `"ID": "`+id+`"`) || !strings.Contains(payload, `"Total": 42`) {
				t.Errorf("%s: payload %q", st, payload)
			}
			for _, a := range []string{"action-cancel", "action-promote", "action-reschedule", "action-requeue"} {
				want := slices.Contains(wantActions[st], a)
				if got := strings.Contains(row, `data-testid="`+a+`"`); got != want {
					t.Errorf("%s: %s shown %v, want %v", st, a, got, want)
				}
			}
			if !strings.Contains(p.body, `data-testid="tab-`+string(st)+`" href="./queue?q=`+url.QueryEscape(f.name)+`&amp;state=`+string(st)+`" class="active" aria-current="page"`) {
				t.Errorf("%s: tab not marked active", st)
			}
			if got, _ := cell(p.body, "action-purge"); got != "Purge "+string(st)+"…" {
				t.Errorf("%s: purge link %q", st, got)
			}
			if got := strings.Contains(p.body, `data-testid="action-requeue-all"`); got != (st == inspect.Dead) {
				t.Errorf("%s: requeue-all shown %v", st, got)
			}
		}
		// The retry's and the dead letter's last error.
		p := b.get("queue?q=" + url.QueryEscape(f.name) + "&state=retry")
		if got, _ := cell(itemRow(p.body, "o-retry"), "last-error"); !strings.HasPrefix(got, "boom") {
			t.Errorf("retry row without its error:\n%s", itemRow(p.body, "o-retry"))
		}
		// The default tab is delayed.
		p = b.get("queue?q=" + url.QueryEscape(f.name))
		if got := itemIDs(p.body); !slices.Equal(got, []string{"o-delayed"}) {
			t.Errorf("default tab rows %q", got)
		}
	})
}

// A long state is listed a page at a time, with links to the previous and
// next pages.
func TestQueuePaging(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		dq := delayed.New(blocking.New[int](rdb, name), delayed.WithoutTransfer())
		defer dq.Close()
		var want []string
		for i := range 7 {
			id := fmt.Sprintf("p-%d", i)
			want = append(want, id)
			if _, err := dq.Offer(ctx, i, time.Hour+time.Duration(i)*time.Second, delayed.WithID(id)); err != nil {
				t.Fatal(err)
			}
		}
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("queue?q=" + url.QueryEscape(name) + "&state=delayed&limit=3")
		wantStatus(t, p, http.StatusOK)
		var got []string
		for pages := 0; ; pages++ {
			if pages > 3 {
				t.Fatal("more than 3 pages")
			}
			got = append(got, itemIDs(p.body)...)
			if !strings.Contains(p.body, `data-testid="page-next"`) {
				break
			}
			p = b.follow(p, hrefOf(t, p.body, "page-next"))
			wantStatus(t, p, http.StatusOK)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pages listed %q, want %q", got, want)
		}
		if r, _ := cell(p.body, "range"); r != "7–7 of 7" {
			t.Errorf("last page's range %q", r)
		}
		p = b.follow(p, hrefOf(t, p.body, "page-prev"))
		if ids := itemIDs(p.body); !slices.Equal(ids, want[3:6]) {
			t.Errorf("previous page %q", ids)
		}
		p = b.get("queue?q=" + url.QueryEscape(name) + "&state=delayed&offset=7")
		wantStatus(t, p, http.StatusOK)
		if len(itemIDs(p.body)) != 0 || !strings.Contains(p.body, `data-testid="no-items"`) {
			t.Errorf("page past the end:\n%s", p.body)
		}
	})
}

// An item's page shows its fields, headers, value and actions; the jump
// form of the queue's page lands there.
func TestItemPage(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("item?q=" + url.QueryEscape(f.name) + "&id=o-ready")
		wantStatus(t, p, http.StatusOK)
		for testid, want := range map[string]string{"item-id": "o-ready", "item-state": "ready"} {
			if got, _ := cell(p.body, testid); got != want {
				t.Errorf("%s = %q, want %q", testid, got, want)
			}
		}
		if !strings.Contains(p.body, `<tr data-testid="header-row" data-name="tenant"><td>tenant</td><td>acme</td></tr>`) {
			t.Errorf("no header tenant:\n%s", p.body)
		}
		if payload, _ := cell(p.body, "payload"); !strings.Contains(payload, `"ID": "o-ready"`) {
			t.Errorf("payload %q", payload)
		}
		if !strings.Contains(p.body, `data-testid="action-cancel"`) || strings.Contains(p.body, `data-testid="action-promote"`) {
			t.Errorf("ready item's actions:\n%s", p.body)
		}

		p = b.get("item?q=" + url.QueryEscape(f.name) + "&id=o-dead")
		if got, _ := cell(p.body, "errors"); !strings.Contains(got, "fatal") {
			t.Errorf("dead letter's errors %q", got)
		}
		if !strings.Contains(p.body, `data-testid="action-requeue"`) {
			t.Error("no requeue on a dead letter's page")
		}

		// The find form of the queue's page finds an item by its ID, in
		// whatever state, and links to its page.
		p = b.get("queue?q=" + url.QueryEscape(f.name))
		form := section(p.body, "form", `method="get"`+` action="./queue" class="inline find" role="search" data-testid="find"`)
		if !strings.Contains(form, `name="q" value="`+f.name+`"`) || !strings.Contains(form, `name="find"`) {
			t.Fatalf("find form:\n%s", form)
		}
		p = b.follow(p, "./queue?"+url.Values{"q": {f.name}, "state": {"delayed"}, "find": {"o-inflight"}}.Encode())
		wantStatus(t, p, http.StatusOK)
		p = b.follow(p, hrefOf(t, p.body, "exact-link"))
		if got, _ := cell(p.body, "item-state"); got != "inflight" {
			t.Errorf("found a %q item", got)
		}
	})
}

// The schedules page lists a queue's recurring schedules.
func TestSchedulesPage(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		dq := delayed.New(blocking.New[string](rdb, name), delayed.WithoutTransfer())
		defer dq.Close()
		if err := dq.Schedule(ctx, "nightly", "0 3 * * *", "report"); err != nil {
			t.Fatal(err)
		}
		if err := dq.Schedule(ctx, "often", "@every 90s", "ping", delayed.WithMissedTicks(delayed.MissedSkip)); err != nil {
			t.Fatal(err)
		}
		// No process transfers the queue: a tick whose time passed is
		// flagged as overdue.
		seedtest.OverdueSchedule(t, rdb, name, "nightly")
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get("schedules?q=" + url.QueryEscape(name))
		wantStatus(t, p, http.StatusOK)
		for _, w := range []struct {
			sched, spec, missed string
			overdue             bool
		}{{"nightly", "0 3 * * *", "latest", true}, {"often", "@every 90s", "skip", false}} {
			row := section(p.body, "tr", `data-testid="schedule-row" data-name="`+w.sched+`"`)
			if got, _ := cell(row, "schedule-spec"); got != w.spec {
				t.Errorf("%s: spec %q, want %q:\n%s", w.sched, got, w.spec, row)
			}
			if got, _ := cell(row, "schedule-zone"); got != "UTC" {
				t.Errorf("%s: zone %q, want UTC:\n%s", w.sched, got, row)
			}
			if got, _ := cell(row, "schedule-missed"); got != w.missed {
				t.Errorf("%s: missed ticks %q, want %q:\n%s", w.sched, got, w.missed, row)
			}
			if got := strings.Contains(row, `data-testid="schedule-overdue"`); got != w.overdue {
				t.Errorf("%s: overdue shown %v, want %v:\n%s", w.sched, got, w.overdue, row)
			}
			if !strings.Contains(row, " UTC") {
				t.Errorf("%s: no next tick:\n%s", w.sched, row)
			}
		}
		if !strings.Contains(p.body, "./queue?q="+url.QueryEscape(name)) {
			t.Error("no link back to the queue")
		}
	})
}
