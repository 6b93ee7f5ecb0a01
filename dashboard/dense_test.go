package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
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
)

// delayedQueue returns a new queue holding n delayed items, ids[i] due in
// an hour and i seconds.
func delayedQueue(t *testing.T, rdb redis.UniversalClient, ids []string) string {
	t.Helper()
	ctx := context.Background()
	name := redistest.QueueName(t)
	dq := delayed.New(blocking.New[int](rdb, name), delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close() })
	for i, id := range ids {
		if _, err := dq.Offer(ctx, i, time.Hour+time.Duration(i)*time.Second, delayed.WithID(id)); err != nil {
			t.Fatal(err)
		}
	}
	return name
}

// numbered returns n IDs, prefix followed by 0 to n-1 on width digits.
func numbered(prefix string, n, width int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%0*d", prefix, width, i)
	}
	return ids
}

// Items selected with their boxes are promoted, requeued or cancelled
// at once, after a page that lists them asks to confirm; an item no longer
// where the action applies is named, the others done.
func TestBulk(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := delayedQueue(t, rdb, numbered("d-", 5, 1))
		in := inspect.New(rdb)
		b := newBrowser(t, dashboard.New(rdb), "")
		p := b.get(tab(name, "delayed"))
		for _, id := range []string{"d-0", "d-4"} {
			if !strings.Contains(itemRow(p.body, id), `<input type="checkbox" name="id" value="`+id+`" form="bulk"`) {
				t.Fatalf("no box for %s:\n%s", id, itemRow(p.body, id))
			}
		}
		if !strings.Contains(p.body, `data-testid="bulk-promote"`) || !strings.Contains(p.body, `data-testid="bulk-cancel"`) || strings.Contains(p.body, `data-testid="bulk-requeue"`) {
			t.Errorf("the bulk actions of delayed items:\n%s", section(p.body, "form", `method="post" action="./actions/bulk`))
		}

		c := b.submit(p, p.body, "bulk-promote", url.Values{"op": {"promote"}, "id": {"d-1", "d-3", "d-1"}})
		if st, _ := in.Stats(ctx, name); st.Ready != 0 {
			t.Fatalf("promoted before confirming: %+v", st)
		}
		if got, _ := cell(c.body, "confirm-ids"); got != "\nd-1\nd-3\n" {
			t.Errorf("the confirm page lists %q", got)
		}
		p = b.followRedirect(wantConfirm(t, b, c, fmt.Sprintf("Promote 2 items of queue %q?", name)))
		wantFlash(t, p, "Promoted 2 items.")
		if st, _ := in.Stats(ctx, name); st.Ready != 2 || st.Delayed != 3 {
			t.Fatalf("after promoting 2: %+v", st)
		}
		if ids := itemIDs(p.body); !slices.Equal(ids, []string{"d-0", "d-2", "d-4"}) || !strings.Contains(p.url.RawQuery, "state=delayed") {
			t.Errorf("back on %s with %q", p.url, ids)
		}

		// d-1 is ready now: cancelling it with d-0 is fine; promoting it is not.
		c = b.submit(p, p.body, "bulk-promote", url.Values{"op": {"promote"}, "id": {"d-0", "d-1"}})
		p = b.followRedirect(wantConfirm(t, b, c, fmt.Sprintf("Promote 2 items of queue %q?", name)))
		if got, _ := cell(p.body, "action-error"); got != `Promoted 1 of 2 items. Not promoted, not found where that applies (taken, settled, cancelled or moved meanwhile): "d-1".` {
			t.Errorf("partial promote: %q", got)
		}
		c = b.submit(p, p.body, "bulk-cancel", url.Values{"op": {"cancel"}, "id": {"d-2", "d-1"}})
		p = b.followRedirect(wantConfirm(t, b, c, fmt.Sprintf("Cancel 2 items of queue %q?", name)))
		wantFlash(t, p, "Cancelled 2 items.")
		if st, _ := in.Stats(ctx, name); st.Ready != 2 || st.Delayed != 1 {
			t.Fatalf("after cancelling 2: %+v", st)
		}

		// Nothing selected, or an action the page does not offer.
		for op, want := range map[string]string{
			"cancel":  "no item selected: tick the box of each item to act on",
			"destroy": `no action "destroy" for the selected items: cancel, promote or requeue`,
		} {
			extra := url.Values{"op": {op}}
			if op != "cancel" {
				extra["id"] = []string{"d-4"}
			}
			p = b.followRedirect(b.submit(p, p.body, "bulk-cancel", extra))
			if got, _ := cell(p.body, "action-error"); !strings.Contains(got, want) {
				t.Errorf("%s: %q, want %q", op, got, want)
			}
		}
		if st, _ := in.Stats(ctx, name); st.Delayed != 1 {
			t.Fatalf("a refused bulk action changed the queue: %+v", st)
		}
	})
}

var rePageLink = regexp.MustCompile(`data-testid="page-(first|prev|next|last|current|\d+)"`)

// pagerLinks returns the testids of the pager's links in s, in order.
func pagerLinks(s string) []string {
	var out []string
	for _, m := range rePageLink.FindAllStringSubmatch(section(s, "nav", `class="pager"`), -1) {
		out = append(out, m[1])
	}
	return out
}

// A state is paged with links to the first, previous, nearby, next and
// last pages, and a form that jumps to a page and sets the page size.
func TestQueuePages(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ids := numbered("p-", 130, 3)
		name := delayedQueue(t, rdb, ids)
		b := newBrowser(t, dashboard.New(rdb), "")
		base := "queue?" + url.Values{"q": {name}, "state": {"delayed"}}.Encode()
		for ref, want := range map[string]struct {
			links []string
			ids   []string
			rng   string
		}{
			base + "&limit=25":          {[]string{"current", "2", "3", "next", "last"}, ids[:25], "1–25 of 130"},
			base + "&limit=25&page=3":   {[]string{"first", "prev", "1", "2", "current", "4", "5", "next", "last"}, ids[50:75], "51–75 of 130"},
			base + "&limit=25&page=6":   {[]string{"first", "prev", "4", "5", "current"}, ids[125:], "126–130 of 130"},
			base + "&limit=25&offset=5": {[]string{"first", "prev", "current", "2", "3", "next", "last"}, ids[5:30], "6–30 of 130"},
			base:                        {[]string{"current", "2", "3", "next", "last"}, ids[:50], "1–50 of 130"},
		} {
			p := b.get(ref)
			wantStatus(t, p, http.StatusOK)
			if got := pagerLinks(p.body); !slices.Equal(got, want.links) {
				t.Errorf("%s: pager %q, want %q", ref, got, want.links)
			}
			if got := itemIDs(p.body); !slices.Equal(got, want.ids) {
				t.Errorf("%s: %d items from %q, want %d from %q", ref, len(got), got[0], len(want.ids), want.ids[0])
			}
			if got, _ := cell(p.body, "range"); got != want.rng {
				t.Errorf("%s: range %q, want %q", ref, got, want.rng)
			}
		}
		p := b.get(base + "&limit=25&page=3")
		if last := hrefOf(t, p.body, "page-last"); !strings.Contains(last, "offset=125") {
			t.Errorf("last page at %q", last)
		}
		form := section(p.body, "form", `method="get" action="./queue" class="inline" data-testid="page-form"`)
		for _, want := range []string{`name="page" min="1" max="6" value="3"`, `<option value="25" selected>25</option>`, `<option value="1000">1000</option>`, `name="state" value="delayed"`} {
			if !strings.Contains(form, want) {
				t.Errorf("page form without %s:\n%s", want, form)
			}
		}
		// A page size not offered is kept, among the others.
		p = b.get(base + "&limit=7")
		if form := section(p.body, "form", `method="get" action="./queue" class="inline" data-testid="page-form"`); !strings.Contains(form, `<option value="7" selected>7</option><option value="25">`) {
			t.Errorf("limit 7 not offered:\n%s", form)
		}
		wantStatus(t, b.get(base+"&page=0"), http.StatusBadRequest)
	})
}

// Finding an ID looks it up whole in every state, and compares its start
// with the IDs of a window of the tab's state, which the page names,
// linking to the next window.
func TestFind(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ids := append(numbered("a-", 1003, 4), "b-1")
		name := delayedQueue(t, rdb, ids)
		f := populate(t, rdb) // o-ready is not delayed
		b := newBrowser(t, dashboard.New(rdb), "")
		find := func(q, find string, extra ...string) page {
			v := url.Values{"q": {q}, "state": {"delayed"}, "find": {find}}
			for i := 0; i+1 < len(extra); i += 2 {
				v.Set(extra[i], extra[i+1])
			}
			p := b.get("queue?" + v.Encode())
			wantStatus(t, p, http.StatusOK)
			return p
		}
		text := func(p page, testid string) string {
			got, _ := cell(p.body, testid)
			return strings.Join(strings.Fields(got), " ")
		}

		p := find(name, "a-000")
		if got, want := itemIDs(p.body), ids[:10]; !slices.Equal(got, want) {
			t.Errorf("a-000: %q, want %q", got, want)
		}
		if got := text(p, "search-window"); got != "IDs starting with “a-000” among the delayed items 1–1000 of 1004: 10 found. Search the next 1000" {
			t.Errorf("a-000: %q", got)
		}
		if got := text(p, "exact-match"); got != "No item has the ID “a-000” exactly, in any state." {
			t.Errorf("a-000: %q", got)
		}
		// The next window holds a-1000 to a-1002 and b-1.
		p = b.follow(p, hrefOf(t, p.body, "search-next"))
		if got := itemIDs(p.body); len(got) != 0 {
			t.Errorf("a-000, next window: %q", got)
		}
		if got := text(p, "search-window"); got != "IDs starting with “a-000” among the delayed items 1001–1004 of 1004: 0 found." {
			t.Errorf("a-000, next window: %q", got)
		}
		p = find(name, "a-10", "offset", "1000")
		if got := itemIDs(p.body); !slices.Equal(got, ids[1000:1003]) {
			t.Errorf("a-10 from 1000: %q", got)
		}
		// The page's limit bounds the rows listed, not the window.
		p = find(name, "a-0", "limit", "5")
		if got, _ := cell(p.body, "search-window"); len(itemIDs(p.body)) != 5 || !strings.Contains(got, "1000 found, the first 5 listed.") {
			t.Errorf("a-0 by 5: %d rows, %q", len(itemIDs(p.body)), got)
		}
		// An exact ID, in another state than the tab's.
		p = find(f.name, "o-ready")
		if got := text(p, "exact-match"); got != "Exact match: o-ready, ready (another tab)." {
			t.Errorf("o-ready: %q", got)
		}
		if got := hrefOf(t, p.body, "exact-link"); got != "./item?id=o-ready&q="+url.QueryEscape(f.name) {
			t.Errorf("o-ready links to %q", got)
		}
		if !strings.Contains(p.body, `data-testid="no-items"`) {
			t.Errorf("o-ready: delayed rows %q", itemIDs(p.body))
		}
		// An action on a row found returns to the search.
		p = find(name, "b-", "offset", "1000")
		r := b.submit(p, itemRow(p.body, "b-1"), "action-promote", nil)
		if loc := r.header.Get("Location"); !strings.Contains(loc, "find=b-") {
			t.Errorf("promote from a search returns to %q", loc)
		}
	})
}
