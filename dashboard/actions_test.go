package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
)

// tab is the ref of a queue's tab.
func tab(name, state string) string {
	return "queue?" + url.Values{"q": {name}, "state": {state}}.Encode()
}

// wantFlash fails the test unless p shows a flash message containing want.
func wantFlash(t *testing.T, p page, want string) {
	t.Helper()
	got, ok := cell(p.body, "flash")
	if !ok || !strings.Contains(got, want) {
		t.Fatalf("%s: flash %q (shown %v), want %q", p.url, got, ok, want)
	}
}

// wantConfirm fails the test unless p is the page that asks to confirm
// an action, asking question, and returns the 303 of confirming it.
func wantConfirm(t *testing.T, b *browser, p page, question string) page {
	t.Helper()
	wantStatus(t, p, http.StatusOK)
	if got, _ := cell(p.body, "confirm-question"); got != question {
		t.Fatalf("%s: asks %q, want %q", p.url, got, question)
	}
	r := b.submit(p, p.body, "confirm", nil)
	wantStatus(t, r, http.StatusSeeOther)
	return r
}

// Each action, POSTed by the dashboard's own forms with their token,
// changes Redis and returns to the page it came from with a flash; pause,
// cancel, purge and requeue-all ask to confirm first, on a page that
// changes nothing.
func TestActions(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := populate(t, rdb)
		b := newBrowser(t, dashboard.New(rdb), "")

		// Pause and resume, from the queue's page.
		p := b.get(tab(f.name, "ready"))
		c := b.submit(p, p.body, "action-pause", nil)
		if f.stats(t).Paused {
			t.Fatal("paused before confirming")
		}
		if keep := hrefOf(t, c.body, "confirm-keep"); !strings.HasPrefix(keep, "../queue?") || !strings.Contains(keep, "state=ready") {
			t.Errorf("the confirm page goes back to %q", keep)
		}
		r := wantConfirm(t, b, c, fmt.Sprintf("Pause queue %q?", f.name))
		if loc := r.header.Get("Location"); !strings.HasPrefix(loc, "../queue?") || !strings.Contains(loc, "state=ready") {
			t.Errorf("pause redirects to %q", loc)
		}
		p = b.followRedirect(r)
		wantFlash(t, p, "Paused queue")
		if !f.stats(t).Paused || !strings.Contains(p.body, `data-testid="paused"`) {
			t.Fatal("not paused")
		}
		p = b.followRedirect(b.submit(p, p.body, "action-resume", nil))
		wantFlash(t, p, "Resumed queue")
		if f.stats(t).Paused || strings.Contains(p.body, `data-testid="paused"`) {
			t.Fatal("still paused")
		}

		// Pause from the overview returns to the overview.
		p = b.get("./")
		r = wantConfirm(t, b, b.submit(p, queueRow(p.body, f.name), "action-pause", nil), fmt.Sprintf("Pause queue %q?", f.name))
		p = b.followRedirect(r)
		if p.url.Path != "/" {
			t.Errorf("pause from the overview returned to %s", p.url)
		}
		wantFlash(t, p, "Paused queue")
		b.followRedirect(b.submit(p, queueRow(p.body, f.name), "action-resume", nil))

		// Promote the delayed item.
		p = b.get(tab(f.name, "delayed"))
		p = b.followRedirect(b.submit(p, itemRow(p.body, "o-delayed"), "action-promote", nil))
		wantFlash(t, p, `Promoted item "o-delayed"`)
		if st := f.stats(t); st.Delayed != 0 || st.Ready != 2 {
			t.Fatalf("after promote: %+v", st)
		}

		// Reschedule the retry: a duration, then an RFC 3339 time, from its
		// item's page (which it returns to).
		p = b.get("item?" + url.Values{"q": {f.name}, "id": {"o-retry"}}.Encode())
		before := time.Now()
		r = b.submit(p, p.body, "action-reschedule", url.Values{"due": {"10m"}})
		if loc := r.header.Get("Location"); !strings.HasPrefix(loc, "../item?") {
			t.Errorf("reschedule from the item's page redirects to %q", loc)
		}
		p = b.followRedirect(r)
		wantFlash(t, p, `Rescheduled item "o-retry"`)
		it, err := f.in.Get(ctx, f.name, "o-retry")
		if err != nil {
			t.Fatal(err)
		}
		// The Redis server's clock and ours agree within a minute.
		if d := it.DueAt.Sub(before); d < 9*time.Minute || d > 11*time.Minute {
			t.Errorf("rescheduled 10m from now: due in %v", d)
		}
		due := time.Date(2031, 2, 3, 4, 5, 6, 0, time.UTC)
		p = b.followRedirect(b.submit(p, p.body, "action-reschedule", url.Values{"due": {due.Format(time.RFC3339)}}))
		if it, err = f.in.Get(ctx, f.name, "o-retry"); err != nil || !it.DueAt.Equal(due) {
			t.Errorf("rescheduled to %v: %v, %v", due, it.DueAt, err)
		}
		// A time that has passed is refused, pointing at Promote, on the
		// page the form was on; the item stays where it was.
		r = b.followRedirect(b.submit(p, p.body, "action-reschedule", url.Values{"due": {"2020-01-01T00:00:00Z"}}))
		if got, _ := cell(r.body, "action-error"); r.url.Path != "/item" || !strings.Contains(got, "has passed") || !strings.Contains(got, "promote") {
			t.Errorf("reschedule to 2020: on %s, %q", r.url, got)
		}
		if it, err = f.in.Get(ctx, f.name, "o-retry"); err != nil || !it.DueAt.Equal(due) {
			t.Errorf("after a refused reschedule to 2020: due %v, %v; want %v", it.DueAt, err, due)
		}

		// Requeue the dead letter.
		p = b.get(tab(f.name, "dead"))
		p = b.followRedirect(b.submit(p, itemRow(p.body, "o-dead"), "action-requeue", nil))
		wantFlash(t, p, `Requeued dead letter "o-dead"`)
		if st := f.stats(t); st.Dead != 0 || st.Ready != 3 {
			t.Fatalf("after requeue: %+v", st)
		}

		// Cancel the retry from its item's page: back to the queue's page.
		p = b.get("item?" + url.Values{"q": {f.name}, "id": {"o-retry"}}.Encode())
		c = b.submit(p, p.body, "action-cancel", nil)
		if got, _ := cell(c.body, "confirm-detail"); !strings.Contains(got, "where it is retry now") {
			t.Errorf("the cancel's confirm page says %q", got)
		}
		if _, err := f.in.Get(ctx, f.name, "o-retry"); err != nil {
			t.Fatalf("cancelled before confirming: %v", err)
		}
		r = wantConfirm(t, b, c, `Cancel item "o-retry"?`)
		if loc := r.header.Get("Location"); !strings.HasPrefix(loc, "../queue?") || !strings.Contains(loc, "state=retry") {
			t.Errorf("cancel from the item's page redirects to %q", loc)
		}
		p = b.followRedirect(r)
		wantFlash(t, p, `Cancelled item "o-retry": it is gone from the queue.`)
		if st := f.stats(t); st.Retry != 0 {
			t.Fatalf("after cancel: %+v", st)
		}
		if _, err := f.in.Get(ctx, f.name, "o-retry"); err == nil {
			t.Fatal("o-retry still there")
		}

		// Purge the ready items: the link opens the confirm page, whose form
		// purges.
		p = b.get(tab(f.name, "ready"))
		p = b.follow(p, hrefOf(t, p.body, "action-purge"))
		wantStatus(t, p, http.StatusOK)
		if q, _ := cell(p.body, "confirm-detail"); !strings.Contains(q, ": 3 now") {
			t.Errorf("purge question %q", q)
		}
		if st := f.stats(t); st.Ready != 3 {
			t.Fatalf("the confirm page changed something: %+v", st)
		}
		p = b.followRedirect(wantConfirm(t, b, p, fmt.Sprintf("Purge the ready items of queue %q?", f.name)))
		wantFlash(t, p, "Purged 3 ready items.")
		if st := f.stats(t); st.Ready != 0 || st.Inflight != 1 {
			t.Fatalf("after purge: %+v", st)
		}
	})
}

// Requeue all moves every dead letter back to ready.
func TestRequeueAll(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
		defer q.Close()
		for _, v := range []string{"a", "b", "c"} {
			if _, err := q.Offer(ctx, v); err != nil {
				t.Fatal(err)
			}
			d, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Nack(ctx, 0, blocking.WithReason(errors.New("no"))); err != nil {
				t.Fatal(err)
			}
		}
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get(tab(name, "dead"))
		if n := len(itemIDs(p.body)); n != 3 {
			t.Fatalf("%d dead letters listed", n)
		}
		p = b.followRedirect(wantConfirm(t, b, b.submit(p, p.body, "action-requeue-all", nil), fmt.Sprintf("Requeue every dead letter of queue %q?", name)))
		wantFlash(t, p, "Requeued 3 dead letters.")
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Dead != 0 || st.Ready != 3 {
			t.Fatalf("after requeue all: %+v", st)
		}
		if !strings.Contains(p.url.RawQuery, "state=dead") || len(itemIDs(p.body)) != 0 {
			t.Errorf("back on %s with rows %q", p.url, itemIDs(p.body))
		}
	})
}
