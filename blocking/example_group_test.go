package blocking_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
)

// A noisy tenant does not hold back the others: groups are served
// round-robin, one item per group per turn.
func ExampleWithGroup() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	exports := blocking.New[string](rdb, "exports")
	defer exports.Close()

	offer := func(tenant string, n int) {
		for i := 1; i <= n; i++ {
			if _, err := exports.Offer(ctx, fmt.Sprintf("%s #%d", tenant, i), blocking.WithGroup(tenant)); err != nil {
				panic(err)
			}
		}
	}
	offer("acme", 4) // a burst from one tenant first
	offer("globex", 1)
	offer("initech", 2)

	for range 7 {
		v, err := exports.Take(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(v)
	}
	// Output:
	// acme #1
	// globex #1
	// initech #1
	// acme #2
	// initech #2
	// acme #3
	// acme #4
}

// Per-tenant webhooks: one delivery at a time per endpoint, in order,
// across every consumer process, and fair across tenants.
func ExampleWithGroupConcurrency() {
	mr, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	type Webhook struct {
		Endpoint string
		Event    string
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hooks := blocking.New[Webhook](rdb, "webhooks")
	defer hooks.Close()

	for i := 1; i <= 3; i++ {
		for _, ep := range []string{"https://a.example/hook", "https://b.example/hook"} {
			h := Webhook{Endpoint: ep, Event: fmt.Sprintf("order.%d", i)}
			if _, err := hooks.Offer(ctx, h, blocking.WithGroup(h.Endpoint)); err != nil {
				panic(err)
			}
		}
	}

	var mu sync.Mutex
	busy := map[string]bool{} // an endpoint with a delivery in flight
	sent := map[string][]string{}
	overlaps := 0
	var wg sync.WaitGroup
	wg.Add(6)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = hooks.Consume(ctx, func(ctx context.Context, d *blocking.Delivery[Webhook]) error {
			mu.Lock()
			if busy[d.Group] {
				overlaps++
			}
			busy[d.Group] = true
			mu.Unlock()

			// post(ctx, d.Value): one request per endpoint at a time

			mu.Lock()
			busy[d.Group] = false
			sent[d.Group] = append(sent[d.Group], d.Value.Event)
			mu.Unlock()
			wg.Done()
			return nil
		}, blocking.WithConcurrency(8), blocking.WithGroupConcurrency(1))
	}()
	wg.Wait()
	cancel() // Consume settles what it holds and returns
	<-stopped

	endpoints := make([]string, 0, len(sent))
	for ep := range sent {
		endpoints = append(endpoints, ep)
	}
	sort.Strings(endpoints)
	for _, ep := range endpoints {
		fmt.Println(ep, strings.Join(sent[ep], " "))
	}
	fmt.Println("overlapping deliveries to one endpoint:", overlaps)
	// Output:
	// https://a.example/hook order.1 order.2 order.3
	// https://b.example/hook order.1 order.2 order.3
	// overlapping deliveries to one endpoint: 0
}
