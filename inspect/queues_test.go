package inspect_test

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// Queues lists the queues that processes announced, in name order: the
// queues they consume, and those they only offered to (announced by their
// first offer, not by every offer).
func TestQueues(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		base := redistest.QueueName(t)
		consumed := []string{base + "-z", base + "-a"}
		for _, name := range consumed {
			q := blocking.New[string](rdb, name)
			t.Cleanup(func() { _ = q.Close() })
			if _, _, err := q.Poll(ctx, 0); err != nil { // starts consuming
				t.Fatal(err)
			}
		}
		offered := base + "-m"
		pc := redistest.NewClientLike(t, rdb)
		zadds := redistest.CountCommands(pc, redistest.IsCommand("zadd"))
		producer := blocking.New[string](pc, offered)
		t.Cleanup(func() { _ = producer.Close() })
		for range 3 {
			if _, err := producer.Offer(ctx, "x"); err != nil {
				t.Fatal(err)
			}
		}
		in := inspect.New(rdb)
		var names []string
		redistest.WaitFor(t, 10*time.Second, "both consumed queues announced", func() bool {
			var err error
			names, err = in.Queues(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return slices.Contains(names, consumed[0]) && slices.Contains(names, consumed[1])
		})
		if !sort.StringsAreSorted(names) || slices.Index(names, base+"-a") > slices.Index(names, base+"-z") {
			t.Fatalf("Queues not in name order: %q", names)
		}
		if !slices.Contains(names, offered) {
			t.Fatalf("Queues does not list %s, which a process offered to: %q", offered, names)
		}
		if n := zadds.Load(); n != 1 {
			t.Fatalf("three offers announced the queue %d times, want once", n)
		}
		if got := countsOf(t, in, offered); got != (counts{0, 0, 3, 0, 0}) {
			t.Fatalf("counts of the offered queue = %v", got)
		}
		if codec, err := rdb.HGet(ctx, redistest.KeysOf(consumed[0]).Meta, "codec").Result(); err != nil || codec != "msgpack" {
			t.Fatalf("recorded codec = %q, %v", codec, err)
		}
		// An empty queue with no keys is known by its registry entry.
		if _, err := in.Stats(ctx, consumed[1]); err != nil {
			t.Fatal(err)
		}
		if _, err := in.Stats(ctx, base+"-never"); !errors.Is(err, inspect.ErrNotFound) {
			t.Fatalf("Stats of a queue never used = %v", err)
		}
	})
}

// Pause through the inspector stops a Consume of another process; Resume
// delivers what was offered meanwhile.
func TestPauseResume(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		producer := blocking.New[string](rdb, name)
		defer producer.Close()
		consumer := blocking.New[string](redistest.NewClientLike(t, rdb), name)
		defer consumer.Close()
		got := make(chan string, 10)
		cctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- consumer.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
				got <- d.Value
				return nil
			})
		}()
		defer func() {
			stop()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Consume = %v", err)
			}
		}()
		offer := func(v string) {
			t.Helper()
			if _, err := producer.Offer(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		offer("before")
		select {
		case v := <-got:
			if v != "before" {
				t.Fatal(v)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("nothing consumed before the pause")
		}
		in := inspect.New(rdb)
		// The queue is empty: the inspector knows it by its consumer's
		// announcement.
		redistest.WaitFor(t, 10*time.Second, "the queue announced", func() bool {
			names, err := in.Queues(ctx)
			return err == nil && slices.Contains(names, name)
		})
		if err := in.Pause(ctx, name); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // Consume sees the flag within 1 s
		for _, v := range []string{"p1", "p2", "p3"} {
			offer(v)
		}
		select {
		case v := <-got:
			t.Fatalf("consumed %q while paused", v)
		case <-time.After(1500 * time.Millisecond):
		}
		st, err := in.Stats(ctx, name)
		if err != nil || !st.Paused || st.Ready != 3 {
			t.Fatalf("Stats while paused = %+v, %v", st, err)
		}
		if err := in.Resume(ctx, name); err != nil {
			t.Fatal(err)
		}
		var after []string
		for len(after) < 3 {
			select {
			case v := <-got:
				after = append(after, v)
			case <-time.After(10 * time.Second):
				t.Fatalf("consumed after Resume: %q", after)
			}
		}
		slices.Sort(after)
		if !slices.Equal(after, []string{"p1", "p2", "p3"}) {
			t.Fatalf("consumed after Resume: %q", after)
		}
		if st, err := in.Stats(ctx, name); err != nil || st.Paused {
			t.Fatalf("Stats after Resume = %+v, %v", st, err)
		}
	})
}

func TestSchedules(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		for _, s := range []struct{ name, spec string }{{"nightly", "0 3 * * *"}, {"every", "@every 1m"}} {
			if err := dq.Schedule(ctx, s.name, s.spec, "v"); err != nil {
				t.Fatal(err)
			}
		}
		infos, err := inspect.New(rdb).Schedules(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(infos) != 2 || infos[0].Name != "every" || infos[1].Name != "nightly" || infos[1].Spec != "0 3 * * *" ||
			!infos[1].Next.After(time.Now()) || infos[1].Next.UTC().Hour() != 3 || !infos[0].Last.IsZero() {
			t.Fatalf("Schedules = %+v", infos)
		}
		// Each names its zone and missed-tick policy; one whose tick no
		// process fired is overdue.
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		if err := dq.Schedule(ctx, "berlin", "0 3 * * *", "v", delayed.WithTimeZone(berlin), delayed.WithMissedTicks(delayed.MissedAll)); err != nil {
			t.Fatal(err)
		}
		if err := dq.Schedule(ctx, "tokyo", "CRON_TZ=Asia/Tokyo 0 3 * * *", "v", delayed.WithMissedTicks(delayed.MissedSkip)); err != nil {
			t.Fatal(err)
		}
		seedtest.OverdueSchedule(t, rdb, name, "tokyo")
		infos, err = inspect.New(rdb).Schedules(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]struct {
			zone    string
			missed  delayed.MissedTicks
			overdue bool
		}{
			"berlin":  {"Europe/Berlin", delayed.MissedAll, false},
			"every":   {"UTC", delayed.MissedLatest, false},
			"nightly": {"UTC", delayed.MissedLatest, false},
			"tokyo":   {"Asia/Tokyo", delayed.MissedSkip, true},
		}
		for _, in := range infos {
			w := want[in.Name]
			if in.Zone != w.zone || in.Missed != w.missed || in.Overdue != w.overdue {
				t.Errorf("%s: zone %q, missed %q, overdue %v; want %q, %q, %v", in.Name, in.Zone, in.Missed, in.Overdue, w.zone, w.missed, w.overdue)
			}
		}
		if len(infos) != len(want) {
			t.Fatalf("Schedules = %+v", infos)
		}
		if _, err := inspect.New(rdb).Schedules(ctx, "no-such-queue-"+name); !errors.Is(err, inspect.ErrNotFound) {
			t.Fatalf("Schedules of an unknown queue = %v", err)
		}
		// A malformed record: ErrCorrupt, naming it.
		if err := rdb.HSet(ctx, redistest.KeysOf(name).Schedules, "broken", "{not json").Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := inspect.New(rdb).Schedules(ctx, name); !errors.Is(err, inspect.ErrCorrupt) || !strings.Contains(err.Error(), "broken") {
			t.Fatalf("Schedules with a malformed record = %v; want ErrCorrupt naming it", err)
		}
	})
}
