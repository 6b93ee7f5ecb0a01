package blocking_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// Dead letters of priority that the dead-letter queue gave back (an
// expired lease there, a Nack there) wait in its priority set, with the
// marker in its ready list: they are still dead letters, counted by
// Stats.Dead, found by RedriveID and the inspector's Requeue and Delete,
// moved by Redrive and dropped by Purge; the marker never is one.
func TestPriorityDeadLettersGivenBack(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		for _, how := range []string{"Redrive", "RedriveID", "Requeue", "Delete", "Purge"} {
			t.Run(how, func(t *testing.T) {
				t.Parallel()
				prDeadGivenBack(t, rdb, how)
			})
		}
	})
}

func prDeadGivenBack(t *testing.T, rdb redis.UniversalClient, how string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(2))
	t.Cleanup(func() { _ = q.Close() })
	in := inspect.New(rdb)
	// Three dead letters: "plain", "u1" and "u2" of priority 5.
	for _, o := range []struct {
		id string
		p  int
	}{{"plain", 0}, {"u1", 5}, {"u2", 5}} {
		if _, err := q.Offer(ctx, o.id, blocking.WithID(o.id), blocking.WithPriority(o.p)); err != nil {
			t.Fatal(err)
		}
	}
	for range 6 { // two attempts each
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	// The dead-letter queue hands out all three, and they fail there: a
	// retry, ready at once (u1 and u2 to its priority set).
	dead := q.DeadLetters()
	ds, err := dead.ReceiveBatch(ctx, 3)
	if err != nil || len(ds) != 3 {
		t.Fatalf("ReceiveBatch of the dead letters = %d, %v", len(ds), err)
	}
	for _, d := range ds {
		if err := d.Nack(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"plain", "u1", "u2"}
	deadIDs := func() []string {
		items, err := in.List(ctx, name, inspect.Dead, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range items {
			ids = append(ids, it.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if ids := deadIDs(); !slices.Equal(ids, want) {
		t.Fatalf("inspector's dead letters %q, want %q", ids, want)
	}
	if st, err := q.Stats(ctx); err != nil || st.Dead != 3 {
		t.Errorf("Stats.Dead = %d, %v; want 3", st.Dead, err)
	}
	if st, err := dead.Stats(ctx); err != nil || st.Ready != 3 {
		t.Errorf("the dead letters' Stats.Ready = %d, %v; want 3", st.Ready, err)
	}

	var moved []string
	switch how {
	case "Redrive":
		n, err := q.Redrive(ctx, 0)
		if err != nil || n != 3 {
			t.Fatalf("Redrive = %d, %v; want 3", n, err)
		}
		moved = want
	case "RedriveID":
		for _, id := range []string{"u1", "plain"} {
			if err := q.RedriveID(ctx, id); err != nil {
				t.Fatalf("RedriveID(%s) = %v", id, err)
			}
		}
		moved = []string{"plain", "u1"}
	case "Requeue":
		if err := in.Requeue(ctx, name, "u2"); err != nil {
			t.Fatalf("inspector's Requeue(u2) = %v", err)
		}
		moved = []string{"u2"}
	case "Delete":
		if err := in.Delete(ctx, name, "u1"); err != nil {
			t.Fatalf("inspector's Delete(u1) = %v", err)
		}
		if ids := deadIDs(); !slices.Equal(ids, []string{"plain", "u2"}) {
			t.Fatalf("dead letters after Delete(u1) = %q", ids)
		}
		return
	case "Purge":
		if n, err := in.Purge(ctx, name, inspect.Dead); err != nil || n != 3 {
			t.Fatalf("Purge(Dead) = %d, %v; want 3", n, err)
		}
		if st, err := q.Stats(ctx); err != nil || st.Dead != 0 {
			t.Fatalf("Stats.Dead after Purge = %d, %v", st.Dead, err)
		}
		if st, err := dead.Stats(ctx); err != nil || st.Ready != 0 {
			t.Fatalf("the dead letters' Stats.Ready after Purge = %d, %v", st.Ready, err)
		}
		return
	}
	// What moved is ready on the queue, priority first; no marker came
	// with it, and the rest is still dead.
	prMarkers(t, rdb, name)
	if st, err := q.Stats(ctx); err != nil || st.Ready != int64(len(moved)) || st.Dead != int64(3-len(moved)) {
		t.Fatalf("Stats after %s = %+v, %v; want %d ready, %d dead", how, st, err, len(moved), 3-len(moved))
	}
	var got []string
	for range moved {
		v, ok, err := q.Poll(ctx, 5*time.Second)
		if err != nil || !ok {
			t.Fatalf("Poll after %s = %q, %v, %v", how, v, ok, err)
		}
		got = append(got, v)
	}
	if v, ok, err := q.Poll(ctx, 0); err != nil || ok {
		t.Fatalf("Poll after the moved items = %q, %v, %v; want nothing", v, ok, err)
	}
	slices.Sort(got)
	if !slices.Equal(got, moved) {
		t.Fatalf("%s moved %q, want %q", how, got, moved)
	}
}
