package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/dashboard"
	"github.com/redelay/redelay/internal/redistest"
)

// historyAnswer is the JSON of api/history.
type historyAnswer struct {
	Minutes int
	Samples []historySample
	Queues  []struct {
		Name       string
		LastMinute *historySample `json:"last_minute"`
		Error      string
	}
}

type historySample struct {
	At                time.Time
	Processed, Failed int64
}

// seedHistory makes the queue name exist (one ready item, which announces
// it) and writes its per-minute counts as the scripts keep them: 7
// processed and 2 failed in the minute under way and the one before (so
// that the last complete minute says so even when a minute starts
// meanwhile), and 3 processed ten minutes ago.
func seedHistory(t *testing.T, rdb redis.UniversalClient, name string) {
	t.Helper()
	ctx := context.Background()
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	if _, err := q.Offer(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	m := now.UnixMilli() / 60000
	f := func(minute int64, kind string) string { return strconv.FormatInt(minute, 10) + kind }
	if err := rdb.HSet(ctx, redistest.KeysOf(name).History,
		f(m, "p"), 7, f(m, "f"), 2, f(m-1, "p"), 7, f(m-1, "f"), 2, f(m-10, "p"), 3).Err(); err != nil {
		t.Fatal(err)
	}
}

// getHistory reads api/history at ref.
func getHistory(t *testing.T, b *browser, ref string) historyAnswer {
	t.Helper()
	p := b.get(ref)
	wantStatus(t, p, http.StatusOK)
	var h historyAnswer
	if err := json.Unmarshal([]byte(p.body), &h); err != nil {
		t.Fatalf("%s: %v: %s", ref, err, p.body)
	}
	return h
}

// sum adds up the samples.
func sum(s []historySample) (processed, failed int64) {
	for _, m := range s {
		processed += m.Processed
		failed += m.Failed
	}
	return processed, failed
}

// api/history of one queue: one sample a minute over the minutes asked
// for, the last the minute under way, oldest first; the last complete
// minute apart. Bad parameters are 400, a missing queue 404.
func TestHistoryOfAQueue(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		seedHistory(t, rdb, name)
		b := newBrowser(t, dashboard.New(rdb), "")
		q := url.QueryEscape(name)
		for ref, want := range map[string]struct {
			minutes           int
			processed, failed int64
		}{
			"api/history?q=" + q:              {60, 17, 4},
			"api/history?minutes=5&q=" + q:    {5, 14, 4},
			"api/history?minutes=1440&q=" + q: {1440, 17, 4},
		} {
			h := getHistory(t, b, ref)
			if h.Minutes != want.minutes || len(h.Samples) != want.minutes {
				t.Errorf("%s: minutes %d, %d samples; want %d", ref, h.Minutes, len(h.Samples), want.minutes)
			}
			for i := 1; i < len(h.Samples); i++ {
				if d := h.Samples[i].At.Sub(h.Samples[i-1].At); d != time.Minute {
					t.Fatalf("%s: samples %d and %d %v apart", ref, i-1, i, d)
				}
			}
			// The minute under way may have begun since the seed: then the
			// oldest seeded minute may have left a 5-minute window.
			if p, f := sum(h.Samples); p != want.processed && !(want.minutes == 5 && p == 7) || f != want.failed && !(want.minutes == 5 && f == 2) {
				t.Errorf("%s: %d processed, %d failed; want %d and %d", ref, p, f, want.processed, want.failed)
			}
			if len(h.Queues) != 1 || h.Queues[0].Name != name || h.Queues[0].LastMinute == nil ||
				h.Queues[0].LastMinute.Processed != 7 || h.Queues[0].LastMinute.Failed != 2 {
				t.Errorf("%s: queues %+v", ref, h.Queues)
			}
			if last := h.Queues[0].LastMinute; last != nil && !last.At.Equal(h.Samples[len(h.Samples)-2].At) {
				t.Errorf("%s: last complete minute at %v, want the one before the last sample, %v", ref, last.At, h.Samples[len(h.Samples)-2].At)
			}
		}
		for ref, status := range map[string]int{
			"api/history?minutes=0&q=" + q:             http.StatusBadRequest,
			"api/history?minutes=1441&q=" + q:          http.StatusBadRequest,
			"api/history?minutes=x&q=" + q:             http.StatusBadRequest,
			"api/history?q=" + q + "-missing":          http.StatusNotFound,
			"api/history?q=" + url.QueryEscape("a{b}"): http.StatusBadRequest,
		} {
			p := b.get(ref)
			wantStatus(t, p, status)
			if !strings.Contains(p.body, `"error":`) || strings.Contains(p.body, "redelay: ") {
				t.Errorf("%s: %s", ref, p.body)
			}
		}
	})
}

// api/history without a queue sums every queue's minutes, and gives each
// queue's last complete minute.
func TestHistoryOfEveryQueue(t *testing.T) {
	rdb := redistest.StartServer(t).Client(t) // no other test's queue in the sum
	a, c := redistest.QueueName(t), redistest.QueueName(t)
	seedHistory(t, rdb, a)
	seedHistory(t, rdb, c)
	b := newBrowser(t, dashboard.New(rdb), "")
	h := getHistory(t, b, "api/history")
	if p, f := sum(h.Samples); len(h.Samples) != 60 || p != 34 || f != 8 {
		t.Errorf("%d samples, %d processed, %d failed; want 60, 34 and 8", len(h.Samples), p, f)
	}
	if len(h.Queues) != 2 {
		t.Fatalf("queues %+v", h.Queues)
	}
	for _, q := range h.Queues {
		if (q.Name != a && q.Name != c) || q.LastMinute == nil || q.LastMinute.Processed != 7 || q.LastMinute.Failed != 2 {
			t.Errorf("queue %+v", q)
		}
	}
}
