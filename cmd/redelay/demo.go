package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
)

// demo is an embedded Redis (miniredis) holding a few queues with live
// traffic, for `dashboard --demo`: "orders" (delayed items due over the
// next minutes, consumed as they fall due), "emails" (a sender that fails
// now and then: retries and dead letters), "reports" (recurring schedules
// whose ticks are consumed) and "invoices" (paused, its ready items
// waiting).
type demo struct {
	mr     *miniredis.Miniredis
	rdb    *redis.Client
	cancel context.CancelFunc // stops the traffic
	wg     sync.WaitGroup     // the traffic's goroutines
	// closers are the queues, closed in reverse order once the traffic
	// stopped.
	closers []interface{ Close() error }
}

// The values of the demo queues; msgpack, the default codec, encodes
// them, and the dashboard shows them decoded.
type (
	// demoOrder is an order of "orders", due when its payment times out.
	demoOrder struct {
		ID       string  `msgpack:"id"`
		Customer string  `msgpack:"customer"`
		Total    float64 `msgpack:"total"`
		Items    int     `msgpack:"items"`
	}
	// demoEmail is a mail of "emails" to send.
	demoEmail struct {
		To       string `msgpack:"to"`
		Template string `msgpack:"template"`
	}
	// demoReport is a report of "reports" to build at each tick.
	demoReport struct {
		Name   string `msgpack:"name"`
		Format string `msgpack:"format"`
	}
	// demoInvoice is an invoice of "invoices" to issue.
	demoInvoice struct {
		Number   string  `msgpack:"number"`
		Customer string  `msgpack:"customer"`
		Amount   float64 `msgpack:"amount"`
		Currency string  `msgpack:"currency"`
	}
)

// startDemo starts the embedded Redis, fills the demo queues and starts
// their traffic, until Stop. ctx bounds the filling only.
func startDemo(ctx context.Context) (*demo, error) {
	mr, err := miniredis.Run()
	if err != nil {
		return nil, fmt.Errorf("demo: starting an embedded Redis: %w", err)
	}
	d := &demo{
		mr:  mr,
		rdb: redis.NewClient(&redis.Options{Addr: mr.Addr(), MaintNotificationsConfig: noMaintNotifications()}),
	}
	traffic, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.cancel = cancel
	setup, cancelSetup := context.WithTimeout(ctx, 30*time.Second)
	defer cancelSetup()
	for _, start := range []func(setup, traffic context.Context) error{d.orders, d.emails, d.reports, d.invoices} {
		if err := start(setup, traffic); err != nil {
			d.Stop()
			return nil, fmt.Errorf("demo: %w", err)
		}
	}
	if err := d.waitListed(setup); err != nil {
		d.Stop()
		return nil, fmt.Errorf("demo: %w", err)
	}
	return d, nil
}

// demoQueues are the names of the demo's queues, in name order.
func demoQueues() []string { return []string{"emails", "invoices", "orders", "reports"} }

// waitListed waits until every demo queue is in the registry of queues:
// their consumers announce them in the background, and the dashboard
// lists a queue from then on.
func (d *demo) waitListed(ctx context.Context) error {
	in := inspect.New(d.rdb)
	for {
		names, err := in.Queues(ctx)
		if err == nil && slices.Equal(names, demoQueues()) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("queues listed: %q, want %q: %w", names, demoQueues(), errors.Join(err, ctx.Err()))
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Client returns the client of the embedded Redis; Stop closes it.
func (d *demo) Client() redis.UniversalClient { return d.rdb }

// Stop stops the traffic and waits for it, closes the queues and the
// client, and stops the embedded Redis.
func (d *demo) Stop() {
	d.cancel()
	d.wg.Wait()
	for i := len(d.closers) - 1; i >= 0; i-- {
		_ = d.closers[i].Close()
	}
	_ = d.rdb.Close()
	d.mr.Close()
}

// quiet keeps the demo queues from logging: their retries and dead
// letters are the show, not news.
func quiet() blocking.Option {
	return blocking.WithLogger(slog.New(slog.DiscardHandler))
}

// goEvery runs f every interval, in a goroutine of the demo's traffic,
// until ctx ends.
func (d *demo) goEvery(ctx context.Context, interval time.Duration, f func(ctx context.Context)) {
	d.wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f(ctx)
			}
		}
	})
}

// goConsume runs q.Consume with handler, two at a time, in a goroutine of
// the demo's traffic, until ctx ends.
func goConsume[T any](d *demo, ctx context.Context, q *blocking.Queue[T], handler blocking.Handler[T], opts ...blocking.ConsumeOption) {
	d.wg.Go(func() {
		_ = q.Consume(ctx, handler, append([]blocking.ConsumeOption{blocking.WithConcurrency(2)}, opts...)...)
	})
}

// work pretends to work for a random time between min and max.
func work(ctx context.Context, min, max time.Duration) {
	t := time.NewTimer(between(min, max))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// between returns a random duration from min to max.
func between(min, max time.Duration) time.Duration {
	return min + rand.N(max-min+1)
}

// customer returns a random customer name.
func customer() string {
	names := [...]string{"acme", "globex", "initech", "umbrella", "hooli", "stark", "wayne", "tyrell"}
	return names[rand.IntN(len(names))]
}

// orders fills "orders" with orders due over the next minutes, and
// starts a producer of more and a consumer of those due.
func (d *demo) orders(setup, traffic context.Context) error {
	q := blocking.New[demoOrder](d.rdb, "orders", quiet())
	dq := delayed.New(q)
	d.closers = append(d.closers, q, dq)
	next := 1001
	offer := func(ctx context.Context, min, max time.Duration) error {
		o := demoOrder{ID: fmt.Sprintf("order-%d", next), Customer: customer(), Total: float64(rand.IntN(50000)) / 100, Items: 1 + rand.IntN(5)}
		next++
		_, err := dq.Offer(ctx, o, between(min, max), delayed.WithID(o.ID))
		return err
	}
	for range 24 {
		if err := offer(setup, 20*time.Second, 8*time.Minute); err != nil {
			return fmt.Errorf("orders: %w", err)
		}
	}
	d.goEvery(traffic, 2*time.Second, func(ctx context.Context) { _ = offer(ctx, 5*time.Second, 3*time.Minute) })
	goConsume(d, traffic, q, func(ctx context.Context, _ *blocking.Delivery[demoOrder]) error {
		work(ctx, 50*time.Millisecond, 400*time.Millisecond)
		return nil
	})
	return nil
}

// emailFailure returns the n-th of the errors of the demo's mail sender,
// cycling through them.
func emailFailure(n int) error {
	msgs := [...]string{
		"smtp: 451 4.7.1 greylisted, try again later",
		"smtp: 421 4.4.2 connection timed out",
		"dial tcp 10.0.3.7:587: connect: connection refused",
	}
	return errors.New(msgs[n%len(msgs)])
}

// emails fills "emails" with a few dead letters, and starts a producer
// of more mail and a sender that fails one time in four (retried three
// times, then dead-lettered) and bounces one in twenty at once.
func (d *demo) emails(setup, traffic context.Context) error {
	q := blocking.New[demoEmail](d.rdb, "emails", quiet(), blocking.WithMaxAttempts(3))
	d.closers = append(d.closers, q)
	templates := []string{"welcome", "receipt", "password-reset", "weekly-digest"}
	newEmail := func() demoEmail {
		return demoEmail{To: customer() + "@example.com", Template: templates[rand.IntN(len(templates))]}
	}
	// A handle that dead-letters at the first failure makes the first
	// dead letters.
	seeder := blocking.New[demoEmail](d.rdb, "emails", quiet(), blocking.WithMaxAttempts(1))
	defer seeder.Close()
	for i := range 5 {
		if _, err := seeder.Offer(setup, newEmail(), blocking.WithID(fmt.Sprintf("email-%d", 501+i))); err != nil {
			return fmt.Errorf("emails: %w", err)
		}
		dl, err := seeder.Receive(setup)
		if err != nil {
			return fmt.Errorf("emails: %w", err)
		}
		if err := dl.Nack(setup, 0, blocking.WithReason(emailFailure(i))); err != nil {
			return fmt.Errorf("emails: %w", err)
		}
	}
	d.goEvery(traffic, 700*time.Millisecond, func(ctx context.Context) { _, _ = q.Offer(ctx, newEmail()) })
	goConsume(d, traffic, q, func(ctx context.Context, _ *blocking.Delivery[demoEmail]) error {
		work(ctx, 100*time.Millisecond, 500*time.Millisecond)
		switch n := rand.IntN(20); {
		case n == 0:
			return blocking.SkipRetry(errors.New("smtp: 550 5.1.1 mailbox unavailable"))
		case n < 5:
			return emailFailure(n)
		default:
			return nil
		}
	}, blocking.WithBackoff(func(attempt int) time.Duration { return time.Duration(attempt) * 3 * time.Second }))
	return nil
}

// reports schedules a report every 5 seconds and one every night on
// "reports", and starts a consumer of their ticks.
func (d *demo) reports(setup, traffic context.Context) error {
	q := blocking.New[demoReport](d.rdb, "reports", quiet())
	dq := delayed.New(q)
	d.closers = append(d.closers, q, dq)
	if err := dq.Schedule(setup, "usage-summary", "@every 5s", demoReport{Name: "usage-summary", Format: "csv"}); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := dq.Schedule(setup, "nightly-export", "0 3 * * *", demoReport{Name: "nightly-export", Format: "parquet"}); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	goConsume(d, traffic, q, func(ctx context.Context, _ *blocking.Delivery[demoReport]) error {
		work(ctx, 200*time.Millisecond, time.Second)
		return nil
	})
	return nil
}

// invoices fills "invoices" with ready items of several priorities and
// pauses it; a producer adds one every few seconds, and a consumer waits
// for a resume.
func (d *demo) invoices(setup, traffic context.Context) error {
	q := blocking.New[demoInvoice](d.rdb, "invoices", quiet())
	d.closers = append(d.closers, q)
	next := 1
	offer := func(ctx context.Context) error {
		inv := demoInvoice{Number: fmt.Sprintf("INV-%04d", next), Customer: customer(), Amount: float64(rand.IntN(900000)) / 100, Currency: "EUR"}
		next++
		_, err := q.Offer(ctx, inv, blocking.WithID(inv.Number), blocking.WithPriority(rand.IntN(3)))
		return err
	}
	for range 12 {
		if err := offer(setup); err != nil {
			return fmt.Errorf("invoices: %w", err)
		}
	}
	if err := q.Pause(setup); err != nil {
		return fmt.Errorf("invoices: %w", err)
	}
	d.goEvery(traffic, 4*time.Second, func(ctx context.Context) { _ = offer(ctx) })
	goConsume(d, traffic, q, func(ctx context.Context, _ *blocking.Delivery[demoInvoice]) error {
		work(ctx, 100*time.Millisecond, 300*time.Millisecond)
		return nil
	})
	return nil
}
