package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// wantNotFound fails unless err wraps ErrNotFound and says what.
func wantNotFound(t *testing.T, what string, err error, says string) {
	t.Helper()
	if !errors.Is(err, inspect.ErrNotFound) || !strings.Contains(err.Error(), says) {
		t.Fatalf("%s = %v; want ErrNotFound saying %q", what, err, says)
	}
}

func TestPromoteReschedule(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := populate(t, rdb)
		in := inspect.New(rdb)
		due := time.Now().Add(2 * time.Hour).Truncate(time.Microsecond)
		for _, id := range []string{"o-delayed", "o-retry"} {
			before, err := in.Get(ctx, f.name, id)
			if err != nil {
				t.Fatal(err)
			}
			if err := in.Reschedule(ctx, f.name, id, due); err != nil {
				t.Fatalf("Reschedule(%s): %v", id, err)
			}
			it, err := in.Get(ctx, f.name, id)
			if err != nil || it.State != before.State || !it.DueAt.Equal(due) || it.Attempt != before.Attempt ||
				it.Headers[blocking.HeaderError] != before.Headers[blocking.HeaderError] {
				t.Fatalf("Get(%s) after Reschedule = %+v, %v", id, it, err)
			}
		}
		for _, c := range []struct{ id, state string }{{"o-ready", "ready"}, {"o-inflight", "inflight"}, {"o-dead", "dead"}} {
			wantNotFound(t, "Reschedule("+c.id+")", in.Reschedule(ctx, f.name, c.id, due),
				`item "`+c.id+`" is `+c.state+`, not delayed or retry`)
			wantNotFound(t, "Promote("+c.id+")", in.Promote(ctx, f.name, c.id),
				`item "`+c.id+`" is `+c.state+`, not delayed or retry`)
		}
		wantNotFound(t, "Promote(nope)", in.Promote(ctx, f.name, "nope"), `no item "nope"`)
		if got := countsOf(t, in, f.name); got != (counts{1, 1, 1, 1, 1}) {
			t.Fatalf("counts after refused moves = %v", got)
		}

		if err := in.Promote(ctx, f.name, "o-delayed"); err != nil {
			t.Fatal(err)
		}
		// A due time that has passed is refused, naming it and the way to
		// make an item ready now; nothing moves.
		err := in.Reschedule(ctx, f.name, "o-retry", time.Now().Add(-time.Minute))
		if !errors.Is(err, inspect.ErrInvalidArgument) || !strings.Contains(err.Error(), "has passed") || !strings.Contains(err.Error(), "promote") {
			t.Fatalf("Reschedule to a minute ago = %v; want ErrInvalidArgument saying it has passed", err)
		}
		if got := countsOf(t, in, f.name); got != (counts{0, 1, 2, 1, 1}) {
			t.Fatalf("counts after a refused reschedule = %v", got)
		}
		// Asked for, a due time that has passed makes the retry ready at once.
		if err := in.Reschedule(ctx, f.name, "o-retry", time.Now().Add(-time.Minute), inspect.AllowPast()); err != nil {
			t.Fatal(err)
		}
		if got := countsOf(t, in, f.name); got != (counts{0, 0, 3, 1, 1}) {
			t.Fatalf("counts after Promote = %v", got)
		}
		items, err := in.List(ctx, f.name, inspect.Ready, 0, 10)
		if err != nil || len(items) != 3 {
			t.Fatalf("List(ready) = %+v, %v", items, err)
		}
		for i, id := range []string{"o-ready", "o-delayed", "o-retry"} { // take order
			if items[i].ID != id || items[i].State != inspect.Ready {
				t.Fatalf("ready[%d] = %+v, want %s", i, items[i], id)
			}
		}
		if items[2].Attempt != 1 || items[2].Headers[blocking.HeaderError] != "boom" {
			t.Fatalf("promoted retry = %+v", items[2])
		}
		wantNotFound(t, "Promote again", in.Promote(ctx, f.name, "o-delayed"), "is ready, not delayed or retry")
	})
}

func TestRequeue(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := populate(t, rdb)
		in := inspect.New(rdb)
		for _, c := range []struct{ id, state string }{
			{"o-delayed", "delayed"}, {"o-retry", "retry"}, {"o-ready", "ready"}, {"o-inflight", "inflight"},
		} {
			wantNotFound(t, "Requeue("+c.id+")", in.Requeue(ctx, f.name, c.id), `item "`+c.id+`" is `+c.state+`, not dead`)
		}
		wantNotFound(t, "Requeue(nope)", in.Requeue(ctx, f.name, "nope"), `no item "nope"`)
		if err := in.Requeue(ctx, f.name, "o-dead"); err != nil {
			t.Fatal(err)
		}
		if got := countsOf(t, in, f.name); got != (counts{1, 1, 2, 1, 0}) {
			t.Fatalf("counts after Requeue = %v", got)
		}
		it, err := in.Get(ctx, f.name, "o-dead")
		if err != nil || it.State != inspect.Ready || it.Attempt != 0 || it.Headers[blocking.HeaderError] == "" {
			t.Fatalf("requeued = %+v, %v", it, err)
		}
		wantNotFound(t, "second Requeue", in.Requeue(ctx, f.name, "o-dead"), "is ready, not dead")
		// It is delivered again.
		for _, id := range []string{"o-ready", "o-dead"} {
			d, err := f.q.Receive(ctx)
			if err != nil || d.ID != id || d.Value.ID != id {
				t.Fatalf("Receive = %+v, %v; want %s", d, err, id)
			}
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestDelete(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := populate(t, rdb)
		in := inspect.New(rdb)
		want := counts{1, 1, 1, 1, 1}
		for i, w := range fixtureItems {
			if err := in.Delete(ctx, f.name, w.id); err != nil {
				t.Fatalf("Delete(%s): %v", w.id, err)
			}
			want[i] = 0
			if got := countsOf(t, in, f.name); got != want {
				t.Fatalf("counts after Delete(%s) = %v, want %v", w.id, got, want)
			}
			wantNotFound(t, "second Delete", in.Delete(ctx, f.name, w.id), `no item "`+w.id+`"`)
			wantNotFound(t, "Get", func() error { _, err := in.Get(ctx, f.name, w.id); return err }(), `no item "`+w.id+`"`)
		}
		checkLeaseGone(t, f, "deleted", false)
	})
}

func TestPurge(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := populate(t, rdb)
		in := inspect.New(rdb)
		want := counts{1, 1, 1, 1, 1}
		for i, st := range inspect.States() {
			n, err := in.Purge(ctx, f.name, st)
			if err != nil || n != 1 {
				t.Fatalf("Purge(%s) = %d, %v", st, n, err)
			}
			want[i] = 0
			if got := countsOf(t, in, f.name); got != want {
				t.Fatalf("counts after Purge(%s) = %v, want %v", st, got, want)
			}
			if n, err := in.Purge(ctx, f.name, st); err != nil || n != 0 {
				t.Fatalf("second Purge(%s) = %d, %v", st, n, err)
			}
		}
		checkLeaseGone(t, f, "purged", true)
		// The queue is still known (its meta hash and registry entry).
		if _, err := in.Stats(ctx, f.name); err != nil {
			t.Fatal(err)
		}
	})
}

// checkLeaseGone checks what the consumer of the fixture's in-flight item
// sees once the item was deleted or purged: Extend reports the lease lost
// (then so does Ack); Ack alone, before the lease would have expired,
// takes the missing lease for its own earlier settlement and may return
// nil. Either way the item stays gone.
func checkLeaseGone(t *testing.T, f *fixture, how string, extend bool) {
	t.Helper()
	ctx := context.Background()
	if extend {
		if err := f.inflight.Extend(ctx, time.Minute); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("Extend of a %s in-flight item = %v", how, err)
		}
	}
	if err := f.inflight.Ack(ctx); err != nil && !errors.Is(err, blocking.ErrLeaseLost) {
		t.Fatalf("Ack of a %s in-flight item = %v", how, err)
	}
	if got := countsOf(t, inspect.New(f.rdb), f.name); got[3] != 0 {
		t.Fatalf("in-flight count after Ack = %v", got)
	}
}
