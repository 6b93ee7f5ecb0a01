package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
)

// A failed delivery waits for its retry; the inspector finds it, shows
// why it failed, and runs it now.
func Example() {
	mr, err := miniredis.Run() // an embedded server; use your Redis in production
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	type Charge struct {
		Order  string `json:"order"`
		Amount int    `json:"amount"`
	}
	q := blocking.New[Charge](rdb, "charges")
	defer q.Close()
	for _, c := range []Charge{{"A-1", 30}, {"A-2", 45}} {
		if _, err := q.Offer(ctx, c, blocking.WithID("charge-"+c.Order)); err != nil {
			panic(err)
		}
	}
	d, err := q.Receive(ctx)
	if err != nil {
		panic(err)
	}
	if err := d.Nack(ctx, time.Hour, blocking.WithReason(errors.New("card declined"))); err != nil {
		panic(err)
	}

	in := inspect.New(rdb)
	st, err := in.Stats(ctx, "charges")
	if err != nil {
		panic(err)
	}
	fmt.Println("ready:", st.Ready, "retry:", st.Retry)
	retries, err := in.List(ctx, "charges", inspect.Retry, 0, inspect.MaxPage)
	if err != nil {
		panic(err)
	}
	for _, it := range retries {
		fmt.Println(it.ID, it.State, it.Attempt, it.Headers[blocking.HeaderError])
	}
	if err := in.Promote(ctx, "charges", "charge-A-1"); err != nil {
		panic(err)
	}
	st, err = in.Stats(ctx, "charges")
	if err != nil {
		panic(err)
	}
	fmt.Println("ready:", st.Ready, "retry:", st.Retry)
	// Output:
	// ready: 1 retry: 1
	// charge-A-1 retry 1 card declined
	// ready: 2 retry: 0
}

// A command-line tool reads a state's name with ParseState.
func ExampleParseState() {
	st, err := inspect.ParseState("Dead")
	fmt.Println(st, err)
	_, err = inspect.ParseState("done")
	fmt.Println(err)
	fmt.Println(errors.Is(err, inspect.ErrInvalidArgument))
	// Output:
	// dead <nil>
	// unknown state "done" (valid: delayed, retry, ready, inflight, dead): redelay: invalid argument
	// true
}
