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

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
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

	rdb, cleanup, err := connect()
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

// connect returns a client to the Redis server at $REDIS_ADDR (host:port),
// after checking that it answers. With REDIS_ADDR unset it starts an
// embedded miniredis on a loopback port instead, so that the example runs on
// a machine with no Redis server, and says so on standard error. cleanup
// closes the client and stops the embedded server, if any.
func connect() (rdb *redis.Client, cleanup func(), err error) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded miniredis: %w", err)
		}
		fmt.Fprintf(os.Stderr, "REDIS_ADDR not set: using an embedded miniredis at %s\n", mr.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		return rdb, func() { _ = rdb.Close(); mr.Close() }, nil
	}
	rdb = redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	return rdb, func() { _ = rdb.Close() }, nil
}
