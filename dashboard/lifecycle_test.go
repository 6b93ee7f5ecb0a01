package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// A schedule runs now from the schedules page, once, leaving its next
// tick as it was; Remove asks first, then removes it; both return to the
// schedules page with a flash.
func TestScheduleActions(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		dq := delayed.New(q, delayed.WithoutTransfer())
		defer dq.Close()
		if err := dq.Schedule(ctx, "nightly", "0 3 * * *", "report"); err != nil {
			t.Fatal(err)
		}
		in := inspect.New(rdb)
		before, err := in.Schedules(ctx, name)
		if err != nil || len(before) != 1 {
			t.Fatalf("schedules %v, %v", before, err)
		}
		b := newBrowser(t, dashboard.New(rdb), "")
		ref := "schedules?q=" + url.QueryEscape(name)
		p := b.get(ref)
		row := section(p.body, "tr", `data-testid="schedule-row" data-name="nightly"`)

		// Run now: one ready item, the schedule as it was.
		r := b.submit(p, row, "action-run-schedule", nil)
		if loc := r.header.Get("Location"); !strings.HasPrefix(loc, "../schedules?") {
			t.Errorf("run now redirects to %q", loc)
		}
		p = b.followRedirect(r)
		wantFlash(t, p, `Ran schedule "nightly" now`)
		st, err := in.Stats(ctx, name)
		if err != nil || st.Ready != 1 {
			t.Fatalf("after run now: %+v, %v", st, err)
		}
		v, ok, err := q.Poll(ctx, 0)
		if err != nil || !ok || v != "report" {
			t.Fatalf("the run's item: %q, %v, %v", v, ok, err)
		}
		after, err := in.Schedules(ctx, name)
		if err != nil || len(after) != 1 || !after[0].Next.Equal(before[0].Next) {
			t.Fatalf("after run now: %+v, %v; want next tick %v", after, err, before[0].Next)
		}

		// Remove: asks, changes nothing until confirmed.
		row = section(p.body, "tr", `data-testid="schedule-row" data-name="nightly"`)
		c := b.submit(p, row, "action-unschedule", nil)
		if got, err := in.Schedules(ctx, name); err != nil || len(got) != 1 {
			t.Fatalf("removed before confirming: %v, %v", got, err)
		}
		p = b.followRedirect(wantConfirm(t, b, c, fmt.Sprintf("Remove schedule %q of queue %q?", "nightly", name)))
		wantFlash(t, p, `Removed schedule "nightly"`)
		if got, err := in.Schedules(ctx, name); err != nil || len(got) != 0 {
			t.Fatalf("after remove: %v, %v", got, err)
		}
		if !strings.Contains(p.body, `data-testid="no-schedules"`) {
			t.Errorf("the schedules page still lists one:\n%s", p.body)
		}

		// Run now of a schedule removed meanwhile: said inline, in plain
		// words, on the schedules page.
		r = b.submit(p, row, "action-run-schedule", nil)
		p = b.followRedirect(r)
		got, ok := cell(p.body, "action-error")
		if !ok || !strings.Contains(got, `Could not run schedule "nightly"`) || strings.Contains(got, "redelay:") {
			t.Errorf("run of a removed schedule: %q (shown %v)", got, ok)
		}

		// Read-only: no buttons.
		if err := dq.Schedule(ctx, "nightly", "0 3 * * *", "report"); err != nil {
			t.Fatal(err)
		}
		ro := newBrowser(t, dashboard.New(rdb, dashboard.ReadOnly()), "")
		if body := ro.get(ref).body; strings.Contains(body, "action-run-schedule") || strings.Contains(body, "action-unschedule") {
			t.Errorf("read-only schedules page has actions:\n%s", body)
		}
	})
}

// A queue that holds nothing can be forgotten from its page, after a
// confirmation: it leaves the overview. One that holds an item has no
// button, and a forged request is refused in plain words.
func TestForgetAction(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get(tab(f.name, "ready"))
		if strings.Contains(p.body, `data-testid="action-forget"`) {
			t.Fatal("a queue holding items offers Forget")
		}
		// The form, as for an empty queue, POSTed anyway.
		name := redistest.QueueName(t) + "-empty"
		q := blocking.New[int](rdb, name)
		defer q.Close()
		if _, err := q.Offer(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if _, ok, err := q.Poll(ctx, 0); err != nil || !ok {
			t.Fatal(ok, err)
		}
		p = b.get(tab(name, "ready"))
		if !strings.Contains(p.body, `data-testid="action-forget"`) {
			t.Fatalf("an empty queue has no Forget:\n%s", p.body)
		}
		// An item arrives between the page and the click: refused.
		if _, err := q.Offer(ctx, 2); err != nil {
			t.Fatal(err)
		}
		c := b.submit(p, p.body, "action-forget", nil)
		if got, _ := cell(c.body, "confirm-detail"); !strings.Contains(got, "holds 1 item now") {
			t.Errorf("confirm detail %q", got)
		}
		p = b.followRedirect(wantConfirm(t, b, c, fmt.Sprintf("Forget queue %q?", name)))
		got, ok := cell(p.body, "action-error")
		if !ok || !strings.Contains(got, "Could not forget queue") || !strings.Contains(got, "holds 1 items") || strings.Contains(got, "redelay:") {
			t.Errorf("forget of a queue holding an item: %q (shown %v)", got, ok)
		}
		if _, ok, err := q.Poll(ctx, 0); err != nil || !ok {
			t.Fatal(ok, err)
		}
		// Now empty: forgotten, back on the overview, which lists it no
		// more.
		p = b.get(tab(name, "ready"))
		r := wantConfirm(t, b, b.submit(p, p.body, "action-forget", nil), fmt.Sprintf("Forget queue %q?", name))
		if loc := r.header.Get("Location"); !strings.HasPrefix(loc, "../?") && loc != "../" {
			t.Errorf("forget redirects to %q", loc)
		}
		p = b.followRedirect(r)
		wantFlash(t, p, fmt.Sprintf("Forgot queue %q", name))
		if queueRow(p.body, name) != "" {
			t.Errorf("the overview still lists %s", name)
		}
		if _, err := inspect.New(rdb).Stats(ctx, name); err == nil {
			t.Error("the forgotten queue still has stats")
		}
		if queueRow(p.body, f.name) == "" {
			t.Errorf("the overview lost %s", f.name)
		}
		wantStatus(t, p, http.StatusOK)
	})
}

// The dead letters dropped to keep a queue within its bounds are shown on
// its page and in the JSON, and only once some were.
func TestDeadDroppedShown(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1), blocking.WithDeadLetterBounds(1, 0))
		defer q.Close()
		b := newBrowser(t, dashboard.New(rdb), "")
		for i := range 3 {
			seedtest.DeadLetter(ctx, t, q, fmt.Sprint("d", i), "v", nil, "boom")
			p := b.get(tab(name, "dead"))
			got, shown := cell(p.body, "dead-dropped")
			if want := fmt.Sprint(i); (i == 0 && shown) || (i > 0 && got != want) {
				t.Errorf("after %d dead letters, bound 1: dead dropped %q (shown %v), want %s", i+1, got, shown, want)
			}
			api := b.get("api/overview?q=" + url.QueryEscape(name))
			if want := fmt.Sprintf(`"dead_dropped":%d`, i); (i == 0 && strings.Contains(api.body, "dead_dropped")) || (i > 0 && !strings.Contains(api.body, want)) {
				t.Errorf("after %d dead letters: JSON %s, want %s", i+1, api.body, want)
			}
		}
	})
}
