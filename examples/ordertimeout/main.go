// Ordertimeout closes the orders that are not paid in time.
//
// Each new order gets a timer in a delayed queue, keyed by the order ID.
// Paying an order cancels its timer with Remove. A consumer receives the
// timers that fall due and closes those orders, unless they were paid
// meanwhile.
//
//	go run ./examples/ordertimeout                              # embedded miniredis
//	REDIS_ADDR=localhost:6379 go run ./examples/ordertimeout    # a Redis server
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
)

// payWithin is how long a customer has to pay. Short for the demo; a shop
// would use something like 30 * time.Minute.
const payWithin = 1500 * time.Millisecond

// shutdownTimeout is how long the consumer's handlers get to finish the
// orders in hand once it is told to stop; then their timers go back to the
// queue for another consumer. Consume's default is 30 s.
const shutdownTimeout = 5 * time.Second

// Order statuses.
const (
	pending = "pending"
	paid    = "paid"
	closed  = "closed"
)

// orderStore stands in for the order database.
type orderStore struct {
	mu     sync.Mutex
	status map[string]string // order ID -> status
}

// transition sets the order's status to "to" if it is "from", and reports
// whether it did: a compare-and-set, as an UPDATE ... WHERE status = 'pending'
// would be. It makes paying and closing safe against each other.
func (s *orderStore) transition(id, from, to string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status[id] != from {
		return false
	}
	s.status[id] = to
	return true
}

// withStatus returns the IDs of the orders in this status, sorted.
func (s *orderStore) withStatus(status string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id, st := range s.status {
		if st == status {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

var start = time.Now()

// logf prints a line stamped with the time since the program started.
func logf(format string, args ...any) {
	fmt.Printf("[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ordertimeout:", err)
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

	// Due timers arrive in timers; each value is an order ID.
	timers := blocking.New[string](rdb, "ordertimeout")
	defer timers.Close()
	deadlines := delayed.New(timers)
	defer deadlines.Close()
	// A demo on a shared server: drop timers left by an interrupted earlier run.
	if err := deadlines.Clear(ctx); err != nil {
		return err
	}

	orders := &orderStore{status: map[string]string{}}

	// The consumer: close each order whose timer falls due. It reports each
	// timer it handled on fired.
	fired := make(chan string, 100)
	consumerCtx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	consumerDone := make(chan error, 1)
	go func() {
		consumerDone <- timers.Consume(consumerCtx, closeUnpaid(orders, fired),
			blocking.WithShutdownTimeout(shutdownTimeout))
	}()

	// The order service: create orders, each with its close-if-unpaid timer.
	var all []string
	for n := 1001; n <= 1008; n++ {
		id := fmt.Sprintf("order-%d", n)
		orders.transition(id, "", pending) // a new order: from no status to pending
		if _, err := deadlines.Offer(ctx, id, payWithin, delayed.WithID(id)); err != nil {
			return err
		}
		all = append(all, id)
		logf("created %s: to be paid within %v", id, payWithin)
	}

	// Some customers pay before the deadline.
	var cancelled []string
	for _, id := range []string{"order-1002", "order-1003", "order-1005", "order-1008"} {
		time.Sleep(200 * time.Millisecond)
		// Record the payment first, then cancel the timer: if the timer fires
		// in between, the consumer finds the order paid and leaves it alone.
		if !orders.transition(id, pending, paid) {
			logf("payment for %s refused: order already closed", id)
			continue
		}
		removed, err := deadlines.Remove(ctx, id)
		if err != nil {
			return err
		}
		if removed {
			cancelled = append(cancelled, id)
			logf("%s paid: timer cancelled", id)
		} else {
			logf("%s paid: its timer had already fired", id)
		}
	}

	// Wait until every order's timer has been cancelled or handled by the
	// consumer, then stop the consumer: Consume lets the handler in hand
	// finish (for up to shutdownTimeout) and settles it before it returns.
	done := map[string]bool{}
	for _, id := range cancelled {
		done[id] = true
	}
	for slices.ContainsFunc(all, func(id string) bool { return !done[id] }) {
		select {
		case id := <-fired:
			done[id] = true
		case err := <-consumerDone:
			return fmt.Errorf("consumer stopped early: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	stopConsumer()
	if err := <-consumerDone; !errors.Is(err, context.Canceled) {
		return fmt.Errorf("consumer: %w", err)
	}

	paidIDs, closedIDs := orders.withStatus(paid), orders.withStatus(closed)
	fmt.Println()
	fmt.Println("paid:            ", strings.Join(paidIDs, ", "))
	fmt.Println("closed as unpaid:", strings.Join(closedIDs, ", "))

	unpaid := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return slices.Contains(paidIDs, id) })
	switch {
	case !slices.Equal(closedIDs, unpaid):
		return fmt.Errorf("closed %v, want exactly the unpaid orders %v", closedIDs, unpaid)
	case !slices.Equal(cancelled, paidIDs):
		return fmt.Errorf("cancelled timers of %v, want those of every paid order %v", cancelled, paidIDs)
	}
	fmt.Println("ok: exactly the unpaid orders were closed")
	return nil
}

// closeUnpaid returns the consumer's handler: it closes the order whose
// timer fell due if the order is still pending, then reports the timer on
// fired. Returning nil acks the timer; an error (a database error, say)
// would retry it with backoff.
//
// Consume delivers at least once: if this process dies while closing an
// order, the timer comes back to another consumer after the visibility
// timeout (30 s by default). Closing is a compare-and-set, so a second
// delivery changes nothing. (Take would be at most once: a timer taken by a
// process that then crashed would be lost, and its order never closed.)
func closeUnpaid(orders *orderStore, fired chan<- string) blocking.Handler[string] {
	return func(ctx context.Context, d *blocking.Delivery[string]) error {
		id := d.Value
		if orders.transition(id, pending, closed) {
			logf("%s not paid in time: closed", id)
		} else {
			logf("timer for %s ignored: order not pending", id)
		}
		select {
		case fired <- id:
		default: // the buffer is full: run no longer counts
		}
		return nil
	}
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
