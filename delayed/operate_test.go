package delayed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

type order struct {
	ID    string
	Total int
}

func TestGetContainsUpdateList(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		_, dq := open[order](t, rdb, redistest.QueueName(t), delayed.WithoutTransfer())
		before := time.Now()
		for i, id := range []string{"c", "a", "b"} {
			if _, err := dq.Offer(ctx, order{ID: id, Total: i}, time.Duration(3-i)*time.Hour, delayed.WithID(id),
				delayed.WithHeaders(map[string]string{"k": id})); err != nil {
				t.Fatal(err)
			}
		}
		it, err := dq.Get(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if it.ID != "a" || it.Value != (order{"a", 1}) || it.Attempt != 0 || it.Headers["k"] != "a" {
			t.Fatalf("Get = %+v", it)
		}
		if d := it.DueAt.Sub(before); d < 2*time.Hour || d > 2*time.Hour+time.Minute {
			t.Fatalf("DueAt %v is %v after the offer, want 2h", it.DueAt, d)
		}
		if it.EnqueuedAt.Before(before.Add(-time.Second)) || it.EnqueuedAt.After(time.Now().Add(time.Second)) {
			t.Fatalf("EnqueuedAt %v", it.EnqueuedAt)
		}
		if _, err := dq.Get(ctx, "nope"); !errors.Is(err, delayed.ErrNotFound) {
			t.Fatalf("Get(nope) = %v, want ErrNotFound", err)
		}
		if ok, err := dq.Contains(ctx, "b"); err != nil || !ok {
			t.Fatalf("Contains(b) = %v, %v", ok, err)
		}
		if ok, err := dq.Contains(ctx, "nope"); err != nil || ok {
			t.Fatalf("Contains(nope) = %v, %v", ok, err)
		}
		if err := dq.Update(ctx, "a", order{"a", 99}); err != nil {
			t.Fatal(err)
		}
		it2, err := dq.Get(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if it2.Value.Total != 99 || !it2.DueAt.Equal(it.DueAt) || it2.Headers["k"] != "a" || !it2.EnqueuedAt.Equal(it.EnqueuedAt) {
			t.Fatalf("after Update: %+v, before %+v", it2, it)
		}
		if err := dq.Update(ctx, "nope", order{}); !errors.Is(err, delayed.ErrNotFound) {
			t.Fatalf("Update(nope) = %v", err)
		}
		items, err := dq.List(ctx, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		if len(ids) != 3 || ids[0] != "b" || ids[1] != "a" || ids[2] != "c" {
			t.Fatalf("List order = %v, want [b a c]", ids)
		}
		page, err := dq.List(ctx, 1, 1)
		if err != nil || len(page) != 1 || page[0].ID != "a" {
			t.Fatalf("List(1,1) = %v, %v", page, err)
		}
		for _, bad := range [][2]int{{-1, 1}, {0, 0}, {0, -5}, {0, delayed.MaxPage + 1}} {
			if _, err := dq.List(ctx, bad[0], bad[1]); !errors.Is(err, delayed.ErrInvalidArgument) {
				t.Fatalf("List(%d, %d) = %v, want ErrInvalidArgument", bad[0], bad[1], err)
			}
		}
	})
}

func TestRescheduleAndPromote(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q, dq := open[order](t, rdb, redistest.QueueName(t))
		if _, err := dq.Offer(ctx, order{ID: "x"}, time.Hour, delayed.WithID("x")); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, order{ID: "y"}, time.Hour, delayed.WithID("y")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := dq.Reschedule(ctx, "x", 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		v, err := q.Take(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.ID != "x" || time.Since(start) < 200*time.Millisecond {
			t.Fatalf("took %v after %v", v, time.Since(start))
		}
		if err := dq.Promote(ctx, "y"); err != nil {
			t.Fatal(err)
		}
		if n, _ := q.Size(ctx); n != 1 {
			t.Fatalf("ready after Promote = %d", n)
		}
		if err := dq.Promote(ctx, "y"); !errors.Is(err, delayed.ErrNotFound) {
			t.Fatalf("second Promote = %v", err)
		}
		if err := dq.Reschedule(ctx, "x", time.Second); !errors.Is(err, blocking.ErrNotFound) {
			t.Fatalf("Reschedule of a taken item = %v", err)
		}
	})
}
