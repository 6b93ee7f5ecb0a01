package redelaytest_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/redelaytest"
)

// An order is closed 30 minutes after it was placed, and the test does not
// wait 30 minutes. In a test, redelaytest.New(t) starts the Env and closes
// it when the test ends.
func Example_delayedTimer() {
	env, err := redelaytest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	ctx := context.Background()

	q := blocking.New[string](env.Client(), "order-timeouts")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	if _, err := dq.Offer(ctx, "close order 7", 30*time.Minute); err != nil {
		log.Fatal(err)
	}

	if err := env.Advance(29 * time.Minute); err != nil {
		log.Fatal(err)
	}
	n, err := q.Size(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("ready after 29 minutes:", n)

	if err := env.Advance(time.Minute); err != nil {
		log.Fatal(err)
	}
	v, err := q.Take(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("after 30 minutes:", v)
	// Output:
	// ready after 29 minutes: 0
	// after 30 minutes: close order 7
}

// A handler that fails is retried with backoff (here 1, 2, 4 minutes);
// the test advances the clock by each backoff in turn. WaitIdle waits for
// the handler's outcome to be recorded before the clock moves on.
func Example_retryWithBackoff() {
	env, err := redelaytest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	q := blocking.New[string](env.Client(), "webhooks")
	defer q.Close()
	if _, err := q.Offer(ctx, "POST /orders/7/paid"); err != nil {
		log.Fatal(err)
	}

	t0 := env.Now()
	backoff := func(attempt int) time.Duration { return time.Minute << (attempt - 1) }
	attempts := make(chan string, 4)
	handler := func(ctx context.Context, d *blocking.Delivery[string]) error {
		if d.Attempt < 4 {
			attempts <- fmt.Sprintf("attempt %d at +%v: failed", d.Attempt, env.Now().Sub(t0))
			return errors.New("gateway down")
		}
		attempts <- fmt.Sprintf("attempt %d at +%v: delivered", d.Attempt, env.Now().Sub(t0))
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- q.Consume(ctx, handler, blocking.WithBackoff(backoff)) }()

	for attempt := 1; attempt <= 4; attempt++ {
		fmt.Println(<-attempts)
		if err := env.WaitIdle(ctx, q); err != nil {
			log.Fatal(err)
		}
		if err := env.Advance(backoff(attempt)); err != nil {
			log.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		log.Fatal(err)
	}
	// Output:
	// attempt 1 at +0s: failed
	// attempt 2 at +1m0s: failed
	// attempt 3 at +3m0s: failed
	// attempt 4 at +7m0s: delivered
}

// A nightly schedule fires at 03:00 each day; the test jumps to it.
func Example_nightlySchedule() {
	env, err := redelaytest.Start(redelaytest.WithTime(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)))
	if err != nil {
		log.Fatal(err)
	}
	defer env.Close()
	ctx := context.Background()

	q := blocking.New[string](env.Client(), "reports")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()
	if err := dq.Schedule(ctx, "nightly", "0 3 * * *", "build the daily report"); err != nil {
		log.Fatal(err)
	}

	for range 2 {
		next := time.Date(env.Now().Year(), env.Now().Month(), env.Now().Day()+1, 3, 0, 0, 0, time.UTC)
		if err := env.AdvanceTo(next); err != nil {
			log.Fatal(err)
		}
		d, err := q.Receive(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.ID, d.Value)
		if err := d.Ack(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// nightly@2026-12-05T03:00:00.000Z build the daily report
	// nightly@2026-12-06T03:00:00.000Z build the daily report
}
