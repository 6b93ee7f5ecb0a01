// Quickstart offers a few items with different delays to a delayed queue and
// takes them from its blocking queue as they fall due.
//
//	go run ./examples/quickstart                              # embedded miniredis
//	REDIS_ADDR=localhost:6379 go run ./examples/quickstart    # a Redis server
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/examples/internal/exampleredis"
)

// task is the value queued. Due is only there to show how late it arrives.
type task struct {
	Name string
	Due  time.Time
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	rdb, cleanup, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer cleanup()

	q := blocking.New[task](rdb, "quickstart") // consumers take ready items from q
	defer q.Close()
	dq := delayed.New(q) // items wait in dq until due, then move to q
	defer dq.Close()

	start := time.Now()
	delays := []time.Duration{time.Second, 0, 2 * time.Second, 300 * time.Millisecond}
	for i, delay := range delays {
		t := task{Name: fmt.Sprintf("task-%d", i+1), Due: time.Now().Add(delay)}
		if _, err := dq.Offer(ctx, t, delay); err != nil {
			return err
		}
		fmt.Printf("offered %s with delay %v\n", t.Name, delay)
	}

	for range delays {
		t, err := q.Take(ctx) // waits until an item is ready (or Ctrl-C)
		if err != nil {
			return err
		}
		now := time.Now()
		fmt.Printf("at %6v took %s, %v late\n",
			now.Sub(start).Round(time.Millisecond), t.Name, now.Sub(t.Due).Round(100*time.Microsecond))
	}
	return nil
}
