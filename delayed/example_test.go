package delayed_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
)

// Items offered out of order are taken in due order.
func ExampleNew() {
	mr, err := miniredis.Run() // an embedded server; use your Redis in production
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "reminders") // where due items are taken from
	defer q.Close()
	dq := delayed.New(q) // where items wait until due
	defer dq.Close()

	// Offered out of order, each due at a time of its own (Offer takes a
	// delay from now instead).
	now := time.Now()
	for _, it := range []struct {
		msg string
		due time.Time
	}{
		{"third", now.Add(600 * time.Millisecond)},
		{"first", now},
		{"second", now.Add(300 * time.Millisecond)},
	} {
		if _, err := dq.OfferAt(ctx, it.msg, it.due); err != nil {
			panic(err)
		}
	}
	for range 3 {
		msg, err := q.Take(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(msg)
	}
	// Output:
	// first
	// second
	// third
}

// An item offered with an ID of one's own can be cancelled before it falls
// due, for instance when the order it would close gets paid.
func ExampleQueue_Remove() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "order-timeouts")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	for _, orderID := range []string{"order-1", "order-2"} {
		if _, err := dq.Offer(ctx, orderID, 500*time.Millisecond, delayed.WithID(orderID)); err != nil {
			panic(err)
		}
	}

	removed, err := dq.Remove(ctx, "order-1") // order-1 got paid
	fmt.Println("removed order-1:", removed, err)
	removed, err = dq.Remove(ctx, "order-1")
	fmt.Println("removed again:", removed, err)

	orderID, err := q.Take(ctx)
	fmt.Println("due:", orderID, err)
	_, ok, err := q.Poll(ctx, 200*time.Millisecond)
	fmt.Println("anything else:", ok, err)
	// Output:
	// removed order-1: true <nil>
	// removed again: false <nil>
	// due: order-2 <nil>
	// anything else: false <nil>
}

// While an item with an ID is pending, a second offer with that ID is
// refused and the first item is kept.
func ExampleWithID() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "invoices")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	id, err := dq.Offer(ctx, "remind INV-7", time.Hour, delayed.WithID("INV-7"))
	fmt.Println(id, err)

	_, err = dq.Offer(ctx, "remind INV-7 again", time.Hour, delayed.WithID("INV-7"))
	fmt.Println("duplicate:", errors.Is(err, delayed.ErrDuplicate))

	n, _ := dq.Size(ctx)
	fmt.Println("pending:", n)
	// Output:
	// INV-7 <nil>
	// duplicate: true
	// pending: 1
}

// OfferBatch offers many values with one delay in few round trips; they
// become ready in slice order.
func ExampleQueue_OfferBatch() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "newsletter")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	ids, err := dq.OfferBatch(ctx, []string{"ada", "grace", "linus"}, 500*time.Millisecond)
	if err != nil {
		panic(err)
	}
	n, _ := dq.Size(ctx)
	fmt.Println("offered:", len(ids), "pending:", n)
	for range ids {
		name, err := q.Take(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println("send to", name)
	}
	// Output:
	// offered: 3 pending: 3
	// send to ada
	// send to grace
	// send to linus
}

// An order timer moved later when the customer asks for more time, looked
// at, then fired at once by an operator.
func ExampleQueue_Reschedule() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "order-timeouts")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	if _, err := dq.Offer(ctx, "close order 42", 30*time.Minute, delayed.WithID("order-42")); err != nil {
		panic(err)
	}
	if err := dq.Reschedule(ctx, "order-42", time.Hour); err != nil {
		panic(err)
	}
	it, err := dq.Get(ctx, "order-42")
	if err != nil {
		panic(err)
	}
	fmt.Println(it.Value, "due in about", time.Until(it.DueAt).Round(time.Minute))

	if err := dq.Promote(ctx, "order-42"); err != nil { // run it now
		panic(err)
	}
	msg, err := q.Take(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println("took:", msg)
	_, err = dq.Get(ctx, "order-42")
	fmt.Println(errors.Is(err, delayed.ErrNotFound))
	// Output:
	// close order 42 due in about 1h0m0s
	// took: close order 42
	// true
}

// Autosave when the user stops typing: each keystroke offers the draft
// again under the document's ID, and the save fires 500 ms after the last
// one, with the latest draft; during a long stream of keystrokes it fires
// at least every 2 s (the max wait, counted from the first offer).
func ExampleWithDebounce() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "autosave")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	for _, draft := range []string{"Dear", "Dear Ada,", "Dear Ada, thanks!"} {
		id, err := dq.Offer(ctx, draft, 500*time.Millisecond,
			delayed.WithID("doc-7"), delayed.WithDebounce(2*time.Second))
		if err != nil {
			panic(err)
		}
		fmt.Println("offered", id)
	}
	n, _ := dq.Size(ctx)
	fmt.Println("pending:", n)

	draft, err := q.Take(ctx) // 500 ms after the last keystroke
	fmt.Println("save:", draft, err)
	_, ok, err := q.Poll(ctx, 300*time.Millisecond)
	fmt.Println("another save:", ok, err)
	// Output:
	// offered doc-7
	// offered doc-7
	// offered doc-7
	// pending: 1
	// save: Dear Ada, thanks! <nil>
	// another save: false <nil>
}

// A payment request offered WithUniqueFor is refused when it comes again
// within the window, even after the first was delivered: a client that
// retries a request does not charge twice.
func ExampleWithUniqueFor() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "charges")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	charge := func() error {
		_, err := dq.Offer(ctx, "charge order 42", 0,
			delayed.WithID("charge-42"), delayed.WithUniqueFor(time.Hour))
		return err
	}
	fmt.Println("first request:", charge())
	msg, err := q.Take(ctx)
	fmt.Println("took:", msg, err)

	err = charge() // the client retried: delivered already, but within the hour
	fmt.Println("retried request is a duplicate:", errors.Is(err, delayed.ErrDuplicate))
	// Output:
	// first request: <nil>
	// took: charge order 42 <nil>
	// retried request is a duplicate: true
}

// A recurring schedule delivers its value at each tick, as an item whose ID
// names the schedule and the tick's time and whose header names the
// schedule. Every process that holds the queue takes part, and each tick
// is delivered once.
func ExampleQueue_Schedule() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	q := blocking.New[string](rdb, "reports")
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	// In production, e.g. "0 3 * * *" with delayed.WithTimeZone(loc): 03:00 every night.
	if err := dq.Schedule(ctx, "heartbeat", "@every 1s", "send heartbeat"); err != nil {
		panic(err)
	}
	for range 2 {
		d, err := q.Receive(ctx)
		if err != nil {
			panic(err)
		}
		name, at, _ := strings.Cut(d.ID, "@") // e.g. heartbeat@2026-12-02T03:00:00.000Z
		fmt.Println(name, len(at), d.Value, d.Headers[delayed.HeaderSchedule])
		if err := d.Ack(ctx); err != nil {
			panic(err)
		}
	}

	infos, err := dq.Schedules(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(infos), infos[0].Name, infos[0].Spec, infos[0].Next.After(infos[0].Last))

	removed, err := dq.Unschedule(ctx, "heartbeat") // withdraws its ticks not yet fired
	fmt.Println("unscheduled:", removed, err)
	_, ok, err := q.Poll(ctx, 1500*time.Millisecond)
	fmt.Println("another tick:", ok, err)
	// Output:
	// heartbeat 24 send heartbeat heartbeat
	// heartbeat 24 send heartbeat heartbeat
	// 1 heartbeat @every 1s true
	// unscheduled: true <nil>
	// another tick: false <nil>
}
