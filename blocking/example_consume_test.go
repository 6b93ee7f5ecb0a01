package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
)

// Receive leases an item instead of removing it: if the receiver crashes
// before Ack, the item comes back after the visibility timeout.
func ExampleQueue_Receive() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "emails")
	defer q.Close()

	if _, err := q.Offer(ctx, "welcome ada@example.com"); err != nil {
		panic(err)
	}
	d, err := q.Receive(ctx) // waits until an item is ready or ctx ends
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (attempt %d)\n", d.Value, d.Attempt)

	// ... send the email, then:
	if err := d.Ack(ctx); err != nil {
		panic(err)
	}
	n, _ := q.Size(ctx)
	fmt.Println("ready after ack:", n)

	// A delivery settles once: a second Ack finds no lease.
	err = d.Ack(ctx)
	fmt.Println("second ack:", errors.Is(err, blocking.ErrLeaseLost))
	// Output:
	// welcome ada@example.com (attempt 1)
	// ready after ack: 0
	// second ack: true
}

// Nack gives an item back for another try; its next delivery counts one
// more attempt and carries the failure in its headers.
func ExampleDelivery_Nack() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "payments")
	defer q.Close()

	if _, err := q.Offer(ctx, "charge order 42"); err != nil {
		panic(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (attempt %d)\n", d.Value, d.Attempt)

	// The payment provider is down: try again. A delay of 0 makes the item
	// ready at once; a real consumer waits a little (see WithBackoff).
	if err := d.Nack(ctx, 0); err != nil {
		panic(err)
	}

	d, err = q.Receive(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (attempt %d, last error %q)\n", d.Value, d.Attempt, d.Headers[blocking.HeaderError])
	if err := d.Ack(ctx); err != nil {
		panic(err)
	}
	// Output:
	// charge order 42 (attempt 1)
	// charge order 42 (attempt 2, last error "nacked")
}

// Consume runs a handler on each item until its context ends: returning nil
// acks the item, returning an error retries it with backoff.
func ExampleQueue_Consume() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	q := blocking.New[string](rdb, "thumbnails")
	defer q.Close()

	images := []string{"cat.png", "dog.png", "owl.png"}
	for _, img := range images {
		if _, err := q.Offer(context.Background(), img); err != nil {
			panic(err)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu   sync.Mutex
		done []string
	)
	handler := func(_ context.Context, d *blocking.Delivery[string]) error {
		// ... resize the image, then:
		mu.Lock()
		defer mu.Unlock()
		done = append(done, "resized "+d.Value)
		if len(done) == len(images) {
			cancel() // stop Consume: this demo has no more work
		}
		return nil
	}
	// Handlers run concurrently; Consume returns once ctx ends and the
	// running handlers have finished and been acked.
	err = q.Consume(ctx, handler, blocking.WithConcurrency(2))
	fmt.Println("consume stopped:", errors.Is(err, context.Canceled))

	slices.Sort(done) // handlers finish in any order
	fmt.Println(strings.Join(done, "\n"))
	// Output:
	// consume stopped: true
	// resized cat.png
	// resized dog.png
	// resized owl.png
}

// An item that fails on its last allowed attempt goes to the dead letters,
// where it waits until someone looks into it and redrives it.
func ExampleQueue_DeadLetters() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "invoices", blocking.WithMaxAttempts(1))
	defer q.Close() // closes q.DeadLetters() too

	if _, err := q.Offer(ctx, "invoice 7"); err != nil {
		panic(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		panic(err)
	}
	if err := d.Nack(ctx, 0); err != nil { // its one attempt failed
		panic(err)
	}
	ready, _ := q.Size(ctx)
	dead, _ := q.DeadLetters().Size(ctx)
	fmt.Println("ready:", ready, "dead:", dead)

	// The cause is fixed: move every dead letter back, attempts reset.
	moved, err := q.Redrive(ctx, 0)
	if err != nil {
		panic(err)
	}
	ready, _ = q.Size(ctx)
	dead, _ = q.DeadLetters().Size(ctx)
	fmt.Println("redriven:", moved, "ready:", ready, "dead:", dead)

	d, err = q.Receive(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s (attempt %d, last error %q)\n", d.Value, d.Attempt, d.Headers[blocking.HeaderError])
	if err := d.Ack(ctx); err != nil {
		panic(err)
	}
	// Output:
	// ready: 0 dead: 1
	// redriven: 1 ready: 1 dead: 0
	// invoice 7 (attempt 1, last error "nacked (attempt 1 of 1)")
}
