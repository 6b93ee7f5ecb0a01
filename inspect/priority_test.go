package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// The inspector lists ready items in take order, those of priority first,
// with their Priority; Get, Delete and Requeue find items in the priority
// set; Stats counts them once (not the marker).
func TestPriorityItems(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
		t.Cleanup(func() { _ = q.Close() })
		for _, o := range []struct {
			id string
			p  int
		}{{"a", 0}, {"b", 3}, {"c", 0}, {"d", 9}, {"e", 3}} {
			if _, err := q.Offer(ctx, o.id, blocking.WithID(o.id), blocking.WithPriority(o.p)); err != nil {
				t.Fatal(err)
			}
		}
		in := inspect.New(rdb)
		items, err := in.List(ctx, name, inspect.Ready, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.ID+":"+string(rune('0'+it.Priority)))
		}
		if want := "d:9 b:3 e:3 a:0 c:0"; strings.Join(got, " ") != want {
			t.Fatalf("List(Ready) = %s, want %s", strings.Join(got, " "), want)
		}
		// Paging crosses from the priority set to the ready list.
		page, err := in.List(ctx, name, inspect.Ready, 2, 2)
		if err != nil || len(page) != 2 || page[0].ID != "e" || page[1].ID != "a" {
			t.Fatalf("List(Ready, 2, 2) = %+v, %v", page, err)
		}
		st, err := in.Stats(ctx, name)
		if err != nil || st.Ready != 5 {
			t.Fatalf("Stats = %+v, %v", st, err)
		}
		it, err := in.Get(ctx, name, "e")
		if err != nil || it.Priority != 3 || it.State != inspect.Ready {
			t.Fatalf("Get(e) = %+v, %v", it, err)
		}
		if err := in.Delete(ctx, name, "b"); err != nil {
			t.Fatal(err)
		}
		if st, _ := in.Stats(ctx, name); st.Ready != 4 {
			t.Fatalf("Ready after Delete(b) = %d", st.Ready)
		}
		// A dead letter of priority goes back to the priority set.
		d, err := q.Receive(ctx)
		if err != nil || d.ID != "d" {
			t.Fatalf("Receive = %+v, %v", d, err)
		}
		if err := d.Nack(ctx, 0); err != nil { // max attempts 1: dead
			t.Fatal(err)
		}
		if err := in.Requeue(ctx, name, "d"); err != nil {
			t.Fatal(err)
		}
		var order []string
		for range 4 {
			v, err := q.Take(ctx)
			if err != nil {
				t.Fatal(err)
			}
			order = append(order, v)
		}
		if strings.Join(order, " ") != "d e a c" {
			t.Fatalf("take order after Requeue = %s", strings.Join(order, " "))
		}
	})
}

func TestRequeueAll(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
		t.Cleanup(func() { _ = q.Close() })
		in := inspect.New(rdb)
		if _, err := in.RequeueAll(ctx, name); !errors.Is(err, inspect.ErrNotFound) {
			t.Fatalf("RequeueAll of a queue that does not exist = %v", err)
		}
		const n = 700 // more than one batch
		for i := range n {
			if _, err := q.Offer(ctx, "v", blocking.WithPriority(i%2)); err != nil {
				t.Fatal(err)
			}
		}
		for done := 0; done < n; {
			ds, err := q.ReceiveBatch(ctx, 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range ds {
				if err := d.Nack(ctx, 0); err != nil { // max attempts 1: dead
					t.Fatal(err)
				}
			}
			done += len(ds)
		}
		if st, _ := in.Stats(ctx, name); st.Dead != n || st.Ready != 0 {
			t.Fatalf("Stats before = %+v", st)
		}
		moved, err := in.RequeueAll(ctx, name)
		if err != nil || moved != n {
			t.Fatalf("RequeueAll = %d, %v; want %d", moved, err, n)
		}
		st, _ := in.Stats(ctx, name)
		if st.Dead != 0 || st.Ready != n {
			t.Fatalf("Stats after = %+v", st)
		}
		items, err := in.List(ctx, name, inspect.Ready, 0, 1)
		if err != nil || len(items) != 1 || items[0].Priority != 1 || items[0].Attempt != 0 {
			t.Fatalf("first ready item after RequeueAll = %+v, %v; want priority 1, attempt 0", items, err)
		}
	})
}

// Purge of the ready items counts the items, not the priority marker
// (before: 2 items of priority 9 purged as 3), whatever the mix.
func TestPurgeReadyOfPriority(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		in := inspect.New(rdb)
		for _, prios := range [][]int{{9, 9}, {0, 0, 0, 5, 5}, {5, 0, 9, 0}} {
			name := redistest.QueueName(t)
			q := blocking.New[string](rdb, name)
			t.Cleanup(func() { _ = q.Close() })
			for _, p := range prios {
				if _, err := q.Offer(ctx, "v", blocking.WithPriority(p)); err != nil {
					t.Fatal(err)
				}
			}
			if st, err := in.Stats(ctx, name); err != nil || st.Ready != int64(len(prios)) {
				t.Fatalf("priorities %v: Stats = %+v, %v", prios, st, err)
			}
			n, err := in.Purge(ctx, name, inspect.Ready)
			if err != nil || n != int64(len(prios)) {
				t.Errorf("priorities %v: Purge(Ready) = %d, %v; want %d", prios, n, err, len(prios))
			}
			if st, err := in.Stats(ctx, name); err != nil || st.Ready != 0 {
				t.Fatalf("priorities %v: Stats after Purge = %+v, %v", prios, st, err)
			}
		}
	})
}
