package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
)

func ExampleNew() {
	mr, err := miniredis.Run() // an embedded server; use your Redis in production
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "greetings")
	defer q.Close()

	for _, s := range []string{"hello", "world"} {
		if _, err := q.Offer(ctx, s); err != nil {
			panic(err)
		}
	}
	n, _ := q.Size(ctx)
	fmt.Println("ready:", n)
	for range n {
		s, err := q.Take(ctx) // first in, first out
		if err != nil {
			panic(err)
		}
		fmt.Println(s)
	}
	// Output:
	// ready: 2
	// hello
	// world
}

func ExampleQueue_Poll() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[int](rdb, "jobs")
	defer q.Close()

	// Nothing arrives within the timeout: ok is false, and err is nil.
	v, ok, err := q.Poll(ctx, 100*time.Millisecond)
	fmt.Println(v, ok, err)

	// An item ready: Poll returns it at once, well within its timeout.
	if _, err := q.Offer(ctx, 42); err != nil {
		panic(err)
	}
	v, ok, err = q.Poll(ctx, time.Second)
	fmt.Println(v, ok, err)
	// Output:
	// 0 false <nil>
	// 42 true <nil>
}

// Values are encoded with msgpack unless told otherwise. JSON makes them
// readable in redis-cli and by programs in other languages.
func ExampleWithCodec() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	type Email struct {
		To      string `json:"to"`
		Subject string `json:"subject"`
	}
	ctx := context.Background()
	q := blocking.New[Email](rdb, "emails", blocking.WithCodec(codec.JSON()))
	defer q.Close()

	if _, err := q.Offer(ctx, Email{To: "ada@example.com", Subject: "Your order shipped"}); err != nil {
		panic(err)
	}
	e, err := q.Take(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%+v\n", e)
	// Output:
	// {To:ada@example.com Subject:Your order shipped}
}

// During an incident: stop every consumer, look at what waits, then go on.
func ExampleQueue_Pause() {
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

	if err := q.Pause(ctx); err != nil { // in every process, until Resume
		panic(err)
	}
	for _, v := range []string{"pay-1", "pay-2"} {
		if _, err := q.Offer(ctx, v); err != nil { // offers go on
			panic(err)
		}
	}
	_, ok, err := q.Poll(ctx, 100*time.Millisecond)
	fmt.Println("handed out while paused:", ok, err)

	st, err := q.Stats(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("paused:", st.Paused, "ready:", st.Ready)
	next, err := q.Peek(ctx, 1)
	if err != nil {
		panic(err)
	}
	fmt.Println("next:", next[0].Value)

	if err := q.Resume(ctx); err != nil {
		panic(err)
	}
	v, err := q.Take(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("took:", v)
	// Output:
	// handed out while paused: false <nil>
	// paused: true ready: 2
	// next: pay-1
	// took: pay-1
}

// An urgent-first queue: support tickets of paying customers jump the
// line; among tickets of one priority, the first in is the first out.
func ExampleWithPriority() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	tickets := blocking.New[string](rdb, "tickets")
	defer tickets.Close()

	offer := func(ticket string, priority int) {
		if _, err := tickets.Offer(ctx, ticket, blocking.WithPriority(priority)); err != nil {
			panic(err)
		}
	}
	offer("free: printer jammed", 0)
	offer("paid: cannot log in", 5)
	offer("free: typo on the site", 0)
	offer("paid: site is down", 9)
	offer("paid: invoice question", 5)

	for range 5 {
		d, err := tickets.Receive(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(d.Priority, d.Value)
		if err := d.Ack(ctx); err != nil {
			panic(err)
		}
	}
	// Output:
	// 9 paid: site is down
	// 5 paid: cannot log in
	// 5 paid: invoice question
	// 0 free: printer jammed
	// 0 free: typo on the site
}

func ExampleWithMaxSize() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	jobs := blocking.New[string](rdb, "exports", blocking.WithMaxSize(2))
	defer jobs.Close()

	for _, job := range []string{"export 1", "export 2", "export 3"} {
		_, err := jobs.Offer(ctx, job)
		switch {
		case errors.Is(err, blocking.ErrQueueFull):
			fmt.Println(job, "refused: try again later")
		case err != nil:
			panic(err)
		default:
			fmt.Println(job, "queued")
		}
	}
	// Output:
	// export 1 queued
	// export 2 queued
	// export 3 refused: try again later
}

func ExampleWithRateLimit() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	calls := blocking.New[string](rdb, "partner-api")
	defer calls.Close()
	for _, c := range []string{"call 1", "call 2", "call 3", "call 4"} {
		if _, err := calls.Offer(ctx, c); err != nil {
			panic(err)
		}
	}

	// At most 20 calls a second, however many processes run this Consume;
	// each handler starts 50 ms after the one before.
	var done []string
	start := time.Now()
	err = calls.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
		done = append(done, d.Value)
		if len(done) == 4 {
			cancel()
		}
		return nil
	}, blocking.WithRateLimit(20, time.Second))
	slices.Sort(done)
	fmt.Println(done, errors.Is(err, context.Canceled))
	fmt.Println("took at least 140 ms:", time.Since(start) >= 140*time.Millisecond)
	// Output:
	// [call 1 call 2 call 3 call 4] true
	// took at least 140 ms: true
}
