// Ordertimeout closes the orders that are not paid in time.
//
// Each new order gets a timer in a delayed queue, keyed by the order ID.
// Paying an order cancels its timer with Remove. A consumer takes the timers
// that fall due and closes those orders, unless they were paid meanwhile.
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

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/examples/internal/exampleredis"
)

// payWithin is how long a customer has to pay. Short for the demo; a shop
// would use something like 30 * time.Minute.
const payWithin = 1500 * time.Millisecond

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

	rdb, cleanup, err := exampleredis.Connect()
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

	// The consumer: close each order whose timer falls due.
	consumerCtx, stopConsumer := context.WithCancel(ctx)
	defer stopConsumer()
	consumerDone := make(chan error, 1)
	go func() { consumerDone <- closeUnpaid(consumerCtx, timers, orders) }()

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

	// Wait until every timer has been cancelled or taken by the consumer,
	// then stop the consumer (it finishes the order in hand first).
	for {
		waiting, err := deadlines.Size(ctx)
		if err != nil {
			return err
		}
		ready, err := timers.Size(ctx)
		if err != nil {
			return err
		}
		if waiting+ready == 0 {
			break
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case err := <-consumerDone:
			return fmt.Errorf("consumer stopped early: %w", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	stopConsumer()
	if err := <-consumerDone; err != nil {
		return err
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

// closeUnpaid takes due timers and closes their orders if still pending,
// until ctx ends.
func closeUnpaid(ctx context.Context, timers *blocking.Queue[string], orders *orderStore) error {
	for {
		id, err := timers.Take(ctx)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
		if orders.transition(id, pending, closed) {
			logf("%s not paid in time: closed", id)
		} else {
			logf("timer for %s ignored: order not pending", id)
		}
	}
}
