package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// testBulk ticks every dead letter of a queue with the box of the table's
// head, requeues them, confirming on the page that lists them, and comes
// back to the dead letters with what was done.
func testBulk(t *testing.T, rdb redis.UniversalClient, browser context.Context, full string) {
	name := countsQueue(t, rdb)
	ctx := newTab(t, browser)
	open(t, ctx, pageURL(full, "queue", "q", name, "state", "dead"))
	waitEqual(t, ctx, "the dead letters listed", itemIDsJS, `["dead-1","dead-2"]`)
	selected := `(() => { const s = document.querySelector('[data-testid="selected-count"]'); return s.hidden ? "(hidden)" : s.textContent; })()`
	waitEqual(t, ctx, "the count of the selected before any", selected, "(hidden)")
	clickJS(t, ctx, `[data-testid="select-all"]`)
	waitEqual(t, ctx, "the count of the selected", selected, " (2)")
	clickAndLoad(t, ctx, `[data-testid="bulk-requeue"]`)
	waitEqual(t, ctx, "the question", textJS(`[data-testid="confirm-question"]`), fmt.Sprintf("Requeue 2 items of queue %q?", name))
	waitEqual(t, ctx, "the items it lists", `JSON.stringify([...document.querySelectorAll('[data-testid="confirm-ids"] li')].map(l => l.textContent))`, `["dead-1","dead-2"]`)
	if st := queueStats(t, rdb, name); st.Dead != 2 {
		t.Fatalf("requeued before confirming: %+v", st)
	}
	clickAndLoad(t, ctx, `[data-testid="confirm"]`)
	waitEqual(t, ctx, "the flash", textJS(`[data-testid="flash"]`), "Requeued 2 items.")
	waitEqual(t, ctx, "the tabs after the requeue", tabsJS, "delayed=3 retry=0 ready=4 inflight=0 dead=0 active=dead")
}

// testInlineError reschedules an item to a time that is no time: the
// item's page comes back saying why, in plain words, where the form was.
func testInlineError(t *testing.T, rdb redis.UniversalClient, browser context.Context, full string) {
	name := countsQueue(t, rdb)
	ctx := newTab(t, browser)
	open(t, ctx, pageURL(full, "item", "q", name, "id", "delayed-1"))
	evalJS[bool](t, ctx, `(() => { document.querySelector('[data-testid="reschedule-due"]').value = "soon"; return true; })()`)
	clickAndLoad(t, ctx, `[data-testid="action-reschedule"]`)
	waitEqual(t, ctx, "the item's page", textJS(`[data-testid="item-id"]`), "delayed-1")
	waitEqual(t, ctx, "the error", textJS(`[data-testid="action-error"]`),
		`Could not reschedule item "delayed-1": due time "soon" is neither a duration such as 10m nor an RFC 3339 time such as 2026-01-02T15:04:05Z.`)
}
