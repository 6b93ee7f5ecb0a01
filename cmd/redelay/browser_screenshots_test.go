package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// screenshotsEnv names the environment variable that makes
// TestBrowserScreenshots write its screenshots to docs/ when it is "1".
const screenshotsEnv = "REDELAY_SCREENSHOTS"

// The screenshots of the documentation, from this directory.
var (
	overviewScreenshot = filepath.Join("..", "..", "docs", "dashboard-overview.png")
	queueScreenshot    = filepath.Join("..", "..", "docs", "dashboard-queue.png")
	itemScreenshot     = filepath.Join("..", "..", "docs", "dashboard-item.png")
	phoneScreenshot    = filepath.Join("..", "..", "docs", "dashboard-phone.png")
)

// historySummaryJS is a script giving whether the history chart has
// drawn: "drawn", or "not yet".
const historySummaryJS = `(() => {
	const s = document.querySelector('[data-testid="history-summary"]');
	return s && s.textContent !== "" ? "drawn" : "not yet";
})()`

// chartPointsJS is a script giving how many samples the chart has drawn.
const chartPointsJS = `(() => {
	const p = document.querySelector('[data-testid="chart"] svg polyline');
	return p ? p.getAttribute("points").trim().split(/\s+/).length : 0;
})()`

// The screenshots of the documentation: the overview of a few realistic
// queues with an hour of history once the depth chart has drawn a few
// samples, the dead letters of one, the story of a dead letter, and the
// overview on a phone in dark mode, served by the command from a Redis
// server of their own (so that no other test's queue shows). They are
// written to docs/ only with REDELAY_SCREENSHOTS=1, so that running the
// tests does not rewrite the committed files; otherwise they are only
// taken and checked.
func TestBrowserScreenshots(t *testing.T) {
	rdb := redistest.StartServer(t).Client(t)
	show := fillShowcase(t, rdb)
	fillStory(t, rdb)
	seedShowcaseHistory(t, rdb)
	base := startDashboard(t, rdb)
	browser := newBrowser(t)
	ctx := newTab(t, browser)

	open(t, ctx, base)
	for _, name := range []string{"emails", "invoices", "orders", "webhooks"} {
		waitVisible(t, ctx, rowSelector(name))
	}
	waitEqual(t, ctx, "the invoices' row", rowJS("invoices"), "delayed=0 retry=0 ready=9 inflight=0 dead=0 paused=true")
	// Some traffic between the samples, for the chart and the rates: a
	// few samples for the tests, more for a picture.
	write := os.Getenv(screenshotsEnv) == "1"
	samples := 3
	if write {
		samples = 8
	}
	for n := 1; n < samples; n++ {
		waitAtLeast(t, ctx, pageWait, "samples drawn", chartPointsJS, n)
		show.traffic(t, n)
	}
	waitAtLeast(t, ctx, pageWait, "samples drawn", chartPointsJS, samples)
	waitEqual(t, ctx, "the history chart", historySummaryJS, "drawn")
	overview := screenshot(t, ctx, wideWidth)

	open(t, ctx, pageURL(base, "queue", "q", "emails", "state", "dead"))
	waitEqual(t, ctx, "the dead letters listed", itemIDsJS, jsonText(show.emailsDead))
	waitAtLeast(t, ctx, pageWait, "samples drawn", chartPointsJS, 2)
	waitEqual(t, ctx, "the history chart", historySummaryJS, "drawn")
	queue := screenshot(t, ctx, wideWidth)

	open(t, ctx, pageURL(base, "item", "q", "payments", "id", "pay_7781"))
	waitEqual(t, ctx, "the dead letter's errors", `String(document.querySelectorAll('[data-testid="error-entry"]').length)`, "3")
	item := screenshot(t, ctx, wideWidth)

	phone := newTabAt(t, browser, narrowWidth)
	prefer(t, phone, "dark")
	open(t, phone, base)
	waitEqual(t, phone, "the history chart", historySummaryJS, "drawn")
	waitAtLeast(t, phone, pageWait, "samples drawn", chartPointsJS, 2)
	onPhone := screenshot(t, phone, narrowWidth)

	if !write {
		return
	}
	for path, b := range map[string][]byte{overviewScreenshot: overview, queueScreenshot: queue, itemScreenshot: item, phoneScreenshot: onPhone} {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// screenshot returns a PNG of the whole page in the tab of ctx, and fails
// the test unless it is one width wide, the tab's viewport.
func screenshot(t *testing.T, ctx context.Context, width int) []byte {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, pageWait)
	defer cancel()
	b, err := chromedp.Run(sctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if cfg.Width != width || cfg.Height < 600 {
		t.Fatalf("screenshot of %d×%d, want %d wide and at least 600 high", cfg.Width, cfg.Height, width)
	}
	return b
}

// showcase is the realistic queues of the screenshots.
type showcase struct {
	orders     *blocking.Queue[map[string]any]
	emails     *blocking.Queue[map[string]any]
	emailsDead []string // the IDs of the dead letters of emails, sorted
}

// fillShowcase fills the queues of the screenshots and waits until the
// registry lists them:
//
//   - orders: 14 delayed orders due over the next hours, 5 ready, 1 in
//     flight;
//   - emails: 4 dead letters with the SMTP and template errors that killed
//     them, 2 retries, 7 ready;
//   - invoices: 9 ready, paused;
//   - webhooks: 3 dead letters of failed deliveries, 2 ready.
//
// Its queues are closed in t.Cleanup.
func fillShowcase(t *testing.T, rdb redis.UniversalClient) *showcase {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	queue := func(name string, attempts int) *blocking.Queue[map[string]any] {
		q := blocking.New[map[string]any](rdb, name, blocking.WithMaxAttempts(attempts))
		t.Cleanup(func() { _ = q.Close() })
		return q
	}
	s := &showcase{}

	// orders
	s.orders = queue("orders", 5)
	dq := delayed.New(s.orders, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close() })
	customers := []string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne"}
	skus := []string{"TSHIRT-BLK-M", "MUG-WHT-350", "HOODIE-NVY-L", "CAP-RED", "STICKER-PACK-10", "POSTER-A2"}
	order := func(n int) map[string]any {
		c := customers[n%len(customers)]
		return map[string]any{
			"order_id": fmt.Sprintf("ord_%d", 10400+n),
			"customer": c,
			"email":    "billing@" + c + ".example",
			"currency": "EUR",
			"total":    float64(1990+n*1337%25000) / 100,
			"items": []map[string]any{
				{"sku": skus[n%len(skus)], "qty": 1 + n%3},
				{"sku": skus[(n+2)%len(skus)], "qty": 1},
			},
		}
	}
	for n := range 6 {
		_, err := s.orders.Offer(ctx, order(n), blocking.WithID(fmt.Sprintf("ord_%d", 10400+n)))
		must(err)
	}
	if _, err := s.orders.Receive(ctx); err != nil { // in flight while the screenshots are taken
		t.Fatal(err)
	}
	for n := 6; n < 20; n++ {
		// Payment windows that close over the next hours.
		_, err := dq.Offer(ctx, order(n), time.Duration(n-4)*11*time.Minute, delayed.WithID(fmt.Sprintf("ord_%d", 10400+n)))
		must(err)
	}

	// emails
	s.emails = queue("emails", 5)
	bounces := queue("emails", 1)
	email := func(to, template, orderID string) map[string]any {
		return map[string]any{"to": to, "template": template, "locale": "en-GB", "order_id": orderID}
	}
	dead := []struct {
		id, to, template, reason string
	}{
		{"msg_01J9ZK4T7Q", "j.doe@example.org", "order-confirmation", "smtp: 550 5.1.1 <j.doe@example.org>: Recipient address rejected: User unknown"},
		{"msg_01J9ZK8M2C", "ops@initech.example", "invoice-reminder", `render template "invoice-reminder": map has no entry for key "due_date"`},
		{"msg_01J9ZKB1XH", "anna.k@umbrella.example", "shipping-update", "smtp: 552 5.2.2 <anna.k@umbrella.example>: Mailbox full"},
		{"msg_01J9ZKF6RW", "billing@hooli.example", "password-reset", "dial tcp 10.0.3.7:587: i/o timeout"},
	}
	for i, d := range dead {
		seedtest.DeadLetter(ctx, t, bounces, d.id, email(d.to, d.template, fmt.Sprintf("ord_%d", 10310+i*7)), map[string]string{"tenant": "eu-west"}, d.reason)
		s.emailsDead = append(s.emailsDead, d.id)
	}
	for i, to := range []string{"li.wei@globex.example", "sam@stark.example"} {
		id := fmt.Sprintf("msg_01J9ZM%dA4V", 3+i)
		_, err := s.emails.Offer(ctx, email(to, "order-confirmation", fmt.Sprintf("ord_%d", 10390+i)), blocking.WithID(id))
		must(err)
		d, err := s.emails.Receive(ctx)
		must(err)
		must(d.Nack(ctx, time.Duration(3+4*i)*time.Minute, blocking.WithReason(errors.New("smtp: 451 4.7.1 Greylisted, please try again later"))))
	}
	for n := range 7 {
		c := customers[(n+3)%len(customers)]
		_, err := s.emails.Offer(ctx, email("orders@"+c+".example", "order-confirmation", fmt.Sprintf("ord_%d", 10400+n)), blocking.WithID(fmt.Sprintf("msg_01J9ZP%02dK8", n+1)))
		must(err)
	}

	// invoices
	invoices := queue("invoices", 5)
	for n := range 10 {
		c := customers[(n+1)%len(customers)]
		_, err := invoices.Offer(ctx, map[string]any{
			"number":   fmt.Sprintf("INV-2025-%04d", 141+n),
			"customer": c,
			"amount":   float64(49000+n*73100%900000) / 100,
			"currency": "EUR",
			"due_date": "2025-02-28",
		}, blocking.WithID(fmt.Sprintf("INV-2025-%04d", 141+n)), blocking.WithPriority(n%3))
		must(err)
	}
	d, err := invoices.Receive(ctx)
	must(err)
	must(d.Ack(ctx))
	must(invoices.Pause(ctx))

	// webhooks
	webhooks := queue("webhooks", 1)
	hook := func(url, event string, n int) map[string]any {
		return map[string]any{"url": url, "event": event, "delivery_id": fmt.Sprintf("dlv_%d", 88120+n)}
	}
	seedtest.DeadLetter(ctx, t, webhooks, "dlv_88120", hook("https://hooks.globex.example/orders", "order.paid", 0), nil, "POST https://hooks.globex.example/orders: 503 Service Unavailable")
	seedtest.DeadLetter(ctx, t, webhooks, "dlv_88121", hook("https://erp.initech.example/api/events", "order.shipped", 1), nil, `Post "https://erp.initech.example/api/events": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`)
	seedtest.DeadLetter(ctx, t, webhooks, "dlv_88122", hook("https://legacy.umbrella.example/notify", "invoice.issued", 2), nil, "POST https://legacy.umbrella.example/notify: 410 Gone")
	for n := 3; n < 5; n++ {
		_, err := webhooks.Offer(ctx, hook("https://hooks.acme.example/redelay", "order.paid", n), blocking.WithID(fmt.Sprintf("dlv_%d", 88120+n)))
		must(err)
	}

	slices.Sort(s.emailsDead)
	want := map[string]inspect.Stats{
		"orders":   {Delayed: 14, Ready: 5, Inflight: 1},
		"emails":   {Retry: 2, Ready: 7, Dead: 4},
		"invoices": {Ready: 9, Paused: true},
		"webhooks": {Ready: 2, Dead: 3},
	}
	for name, w := range want {
		waitListed(t, rdb, name, func(st inspect.Stats) bool {
			st.Latency, st.NextDue, st.Eviction, st.Processed, st.Failed = 0, time.Time{}, "", 0, 0
			return st == w
		})
	}
	return s
}

// traffic is step n of the shop's work: new orders and emails, some
// handled, an email greylisted now and then.
func (s *showcase) traffic(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 2 + n%3 {
		id := fmt.Sprintf("ord_%d", 10500+10*n+i)
		_, err := s.orders.Offer(ctx, map[string]any{"order_id": id, "customer": "acme", "email": "billing@acme.example", "currency": "EUR", "total": 24.9 + float64(i)})
		must(err)
		_, err = s.emails.Offer(ctx, map[string]any{"to": "billing@acme.example", "template": "order-confirmation", "locale": "en-GB", "order_id": id})
		must(err)
	}
	for _, q := range []*blocking.Queue[map[string]any]{s.orders, s.emails} {
		d, err := q.Receive(ctx)
		must(err)
		must(d.Ack(ctx))
	}
	if n%2 == 0 {
		d, err := s.emails.Receive(ctx)
		must(err)
		must(d.Nack(ctx, 5*time.Minute, blocking.WithReason(errors.New("smtp: 451 4.7.1 Greylisted, please try again later"))))
	}
}

// fillStory makes the queue payments hold one dead letter, pay_7781,
// dead-lettered after three attempts that failed as a card payment does,
// and waits until its Consume has stopped.
func fillStory(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	q := blocking.New[map[string]any](rdb, "payments", blocking.WithMaxAttempts(3))
	t.Cleanup(func() { _ = q.Close() })
	if _, err := q.Offer(ctx, map[string]any{"payment_id": "pay_7781", "order_id": "ord_10388", "amount": 129.9, "currency": "EUR", "card": "visa •••• 4242"},
		blocking.WithID("pay_7781")); err != nil {
		t.Fatal(err)
	}
	failures := []string{
		"stripe: card_declined: Your card has insufficient funds. (request req_8Hq2dM1x)",
		`stripe: Post "https://api.stripe.com/v1/payment_intents": context deadline exceeded`,
		"stripe: card_declined: Your card has insufficient funds. (request req_9Kt7pQ4z)",
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[map[string]any]) error {
			return errors.New(failures[min(d.Attempt, len(failures))-1])
		}, blocking.WithBackoff(seedtest.FastBackoff))
	}()
	waitListed(t, rdb, "payments", func(st inspect.Stats) bool { return st.Dead == 1 })
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// seedShowcaseHistory writes an hour of per-minute counts for the
// showcase's busy queues, as the scripts that settle keep them, and adds
// them to the queues' totals, so that the pictures show a working shop
// rather than the minute the test ran in.
func seedShowcaseHistory(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	now, err := rdb.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	last := now.UnixMilli() / 60000
	for _, q := range []struct {
		name             string
		processed, flaky int
	}{{"orders", 38, 0}, {"emails", 26, 3}, {"webhooks", 9, 2}} {
		k := redistest.KeysOf(q.name)
		var processed, failed int64
		fields := map[string]any{}
		for i := int64(1); i <= 60; i++ {
			m := last - i
			// A morning's rise and a few bumps, the same at every run.
			p := int64(q.processed) * (100 + 4*(60-i) + (m*37)%23) / 160
			f := int64(0)
			if q.flaky > 0 {
				f = (m * 13) % int64(q.flaky+1)
			}
			fields[fmt.Sprintf("%dp", m)] = p
			fields[fmt.Sprintf("%df", m)] = f
			processed += p
			failed += f
		}
		if err := rdb.HSet(ctx, k.History, fields).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HIncrBy(ctx, k.Meta, "processed", processed).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HIncrBy(ctx, k.Meta, "failed", failed).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
