package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/redistest"
)

// seedMinutes writes the per-minute counts of the queue name as the
// scripts keep them: 7 processed and 2 failed in the minute under way and
// the one before, so that the last complete minute says so even when a
// minute starts meanwhile.
func seedMinutes(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := now.UnixMilli() / 60000
	f := func(minute int64, kind string) string { return strconv.FormatInt(minute, 10) + kind }
	if err := rdb.HSet(ctx, redistest.KeysOf(name).History, f(m, "p"), 7, f(m, "f"), 2, f(m-1, "p"), 7, f(m-1, "f"), 2).Err(); err != nil {
		t.Fatal(err)
	}
}

// ratesJS returns a script giving the processed and failed figures in
// scope (a CSS selector): totals and per minute, as in "processed=0
// failed=2 processed/min=7 failed/min=2".
func ratesJS(scope string) string {
	return `(() => {
		const s = document.querySelector(` + jsString(scope) + `);
		if (!s) return "(none)";
		const n = id => { const c = s.querySelector('[data-testid="' + id + '"]'); return c ? c.textContent.trim() : "?"; };
		return "processed=" + n("processed") + " failed=" + n("failed") +
			" processed/min=" + n("processed-rate") + " failed/min=" + n("failed-rate");
	})()`
}

// historyPointsJS is a script giving how many minutes the history chart
// has drawn: the complete ones as a line, and the minute under way.
const historyPointsJS = `(() => {
	const svg = document.querySelector('[data-testid="history"] svg');
	const lines = svg ? svg.querySelectorAll("polyline.h-processed") : [];
	if (lines.length !== 2) return lines.length + " lines";
	const n = l => l.getAttribute("points").trim().split(/\s+/).length;
	return n(lines[0]) + " complete + " + (n(lines[1]) - 1) + " under way, of " + svg.dataset.minutes;
})()`

// testHistory checks the figures Redis counted: each queue's processed
// and failed totals on the overview and on its page, with the last
// complete minute's, and the chart of the minutes, 1 h and then 6 h of
// them.
func testHistory(t *testing.T, rdb redis.UniversalClient, browser context.Context, full string) {
	name := countsQueue(t, rdb) // its 2 dead letters failed once each
	seedMinutes(t, rdb, name)
	ctx := newTab(t, browser)
	open(t, ctx, full)
	waitEqual(t, ctx, "the overview's figures of the queue", ratesJS(rowSelector(name)), "processed=0 failed=2 processed/min=7 failed/min=2")
	waitEqual(t, ctx, "the minutes of the overview's chart", historyPointsJS, "59 complete + 1 under way, of 60")

	open(t, ctx, pageURL(full, "queue", "q", name))
	waitEqual(t, ctx, "the queue page's figures", ratesJS("dl.facts"), "processed=0 failed=2 processed/min=7 failed/min=2")
	waitEqual(t, ctx, "the minutes of the queue's chart", historyPointsJS, "59 complete + 1 under way, of 60")
	waitEqual(t, ctx, "the chart's summary", `document.querySelector('[data-testid="history-summary"]').textContent.replace(/\(\d\d:\d\d\)/, "(T)")`,
		"Last complete minute (T): 7 processed, 2 failed. Over the hour shown: 14 processed, 4 failed. The dashed end is the minute under way.")
	clickJS(t, ctx, `[data-testid="range-360"]`)
	waitEqual(t, ctx, "the minutes of the queue's chart over 6 h", historyPointsJS, "359 complete + 1 under way, of 360")
	waitEqual(t, ctx, "the range pressed", `document.querySelector('[data-testid="range-360"]').getAttribute("aria-pressed")`, "true")
}

// clickJS clicks the element sel selects in the page of ctx, with a
// script: for a control that loads no page.
func clickJS(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	if !evalJS[bool](t, ctx, `(() => { const e = document.querySelector(`+jsString(sel)+`); if (!e) return false; e.click(); return true; })()`) {
		t.Fatalf("no %s to click", sel)
	}
}
