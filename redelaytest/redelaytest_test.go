package redelaytest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/redelaytest"
	"github.com/redelay/redelay/transfer"
)

// testTimeout bounds each test's waits: a hang fails, it does not stall.
const testTimeout = 30 * time.Second

func setup(t *testing.T, opts ...blocking.Option) (*redelaytest.Env, *blocking.Queue[string], *delayed.Queue[string], context.Context) {
	t.Helper()
	env := redelaytest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	q := blocking.New[string](env.Client(), "orders", opts...)
	t.Cleanup(func() { _ = q.Close() })
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close() })
	return env, q, dq, ctx
}

func stats(ctx context.Context, t *testing.T, q *blocking.Queue[string]) blocking.Stats {
	t.Helper()
	st, err := q.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// receiveAll receives and acks what is ready, and returns the values and
// IDs in the order received.
func receiveAll(ctx context.Context, t *testing.T, q *blocking.Queue[string]) (values, ids []string) {
	t.Helper()
	for {
		n, err := q.Size(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return values, ids
		}
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		values, ids = append(values, d.Value), append(ids, d.ID)
		if err := d.Ack(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func values(v, _ []string) []string { return v }

// Items become ready when the clock reaches their due time, in due order,
// and not before; Stats and the inspector read the same clock.
func TestAdvanceMakesDueItemsReadyInDueOrder(t *testing.T) {
	env, q, dq, ctx := setup(t)
	t0 := env.Now()
	for _, m := range []int{30, 10, 40, 20} {
		if _, err := dq.Offer(ctx, fmt.Sprintf("due +%dm", m), time.Duration(m)*time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := receiveAll(ctx, t, q); len(got) != 0 {
		t.Fatalf("ready before any time passed: %v", got)
	}
	if st := stats(ctx, t, q); st.Delayed != 4 || !st.NextDue.Equal(t0.Add(10*time.Minute)) {
		t.Fatalf("Stats = %+v, want 4 delayed, next due %v", st, t0.Add(10*time.Minute))
	}
	env.Advance(10*time.Minute - time.Microsecond)
	if got, _ := receiveAll(ctx, t, q); len(got) != 0 {
		t.Fatalf("ready a microsecond before its due time: %v", got)
	}
	env.Advance(25*time.Minute + time.Microsecond)
	if got, want := values(receiveAll(ctx, t, q)), []string{"due +10m", "due +20m", "due +30m"}; !slices.Equal(got, want) {
		t.Fatalf("after 35 minutes took %v, want %v", got, want)
	}
	in := inspect.New(env.Client())
	st, err := in.Stats(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if st.Delayed != 1 || !st.NextDue.Equal(t0.Add(40*time.Minute)) {
		t.Fatalf("inspect Stats = %+v, want 1 delayed, due at %v", st, t0.Add(40*time.Minute))
	}
	if !env.Now().Equal(t0.Add(35 * time.Minute)) {
		t.Fatalf("Now = %v, want %v", env.Now(), t0.Add(35*time.Minute))
	}
}

// A lease that ran out under Advance is lost: a late Ack says so, and the
// item is delivered again; a lease still running acks fine.
func TestLateAckAfterLeaseRanOutIsLost(t *testing.T) {
	env, q, _, ctx := setup(t, blocking.WithVisibilityTimeout(30*time.Second))
	if _, err := q.Offer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env.Advance(31 * time.Second)
	if err := d.Ack(ctx); !errors.Is(err, blocking.ErrLeaseLost) {
		t.Fatalf("Ack after the lease ran out = %v, want ErrLeaseLost", err)
	}
	d2, err := q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d2.ID != d.ID || d2.Attempt != 2 {
		t.Fatalf("delivered again: %s attempt %d, want %s attempt 2", d2.ID, d2.Attempt, d.ID)
	}
	env.Advance(29 * time.Second)
	if err := d2.Ack(ctx); err != nil {
		t.Fatalf("Ack within the lease = %v", err)
	}
	if st := stats(ctx, t, q); st.Inflight != 0 || st.Ready != 0 || st.Processed != 1 {
		t.Fatalf("Stats = %+v, want nothing left, 1 processed", st)
	}
}

// A lease that runs out on its last attempt dead-letters the item.
func TestLeaseRanOutOnLastAttemptDeadLetters(t *testing.T) {
	env, q, _, ctx := setup(t, blocking.WithVisibilityTimeout(time.Minute), blocking.WithMaxAttempts(2))
	if _, err := q.Offer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for attempt := 1; attempt <= 2; attempt++ {
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if d.Attempt != attempt {
			t.Fatalf("attempt %d, want %d", d.Attempt, attempt)
		}
		env.Advance(time.Minute + time.Millisecond)
	}
	if st := stats(ctx, t, q); st.Dead != 1 || st.Ready != 0 || st.Inflight != 0 {
		t.Fatalf("Stats = %+v, want the item dead", st)
	}
}

// Take never hands out an item whose TTL ran out under Advance: it goes
// to the dead letters, whether it was ready before the clock moved or
// became ready with it.
func TestTakeNeverHandsOutExpired(t *testing.T) {
	env, q, dq, ctx := setup(t)
	if _, err := q.Offer(ctx, "ready, expires", blocking.WithTTL(10*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := dq.Offer(ctx, "delayed, expires", 5*time.Minute, delayed.WithTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Offer(ctx, "ready, no TTL"); err != nil {
		t.Fatal(err)
	}
	env.Advance(10*time.Minute + time.Millisecond)
	// The ready list holds both expired items and the other; Take passes
	// over the first, and Poll finds nothing but the second.
	if v, err := q.Take(ctx); err != nil || v != "ready, no TTL" {
		t.Fatalf("Take = %q, %v; want %q", v, err, "ready, no TTL")
	}
	if v, ok, err := q.Poll(ctx, 20*time.Millisecond); ok || err != nil {
		t.Fatalf("Poll = %q, %v, %v: want nothing", v, ok, err)
	}
	if st := stats(ctx, t, q); st.Dead != 2 {
		t.Fatalf("Stats = %+v, want the 2 expired items dead", st)
	}
}

// Receive does not lease an item whose TTL ran out either (the script
// checks it).
func TestReceiveNeverLeasesExpired(t *testing.T) {
	env, q, _, ctx := setup(t)
	if _, err := q.Offer(ctx, "expires", blocking.WithTTL(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Offer(ctx, "stays"); err != nil {
		t.Fatal(err)
	}
	env.Advance(2 * time.Minute)
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Value != "stays" {
		t.Fatalf("received %q, want %q", d.Value, "stays")
	}
}

// A Nack's retry waits for its delay on the clock.
func TestNackRetryFollowsClock(t *testing.T) {
	env, q, _, ctx := setup(t)
	if _, err := q.Offer(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Nack(ctx, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	env.Advance(5*time.Minute - time.Millisecond)
	if st := stats(ctx, t, q); st.Retry != 1 || st.Ready != 0 {
		t.Fatalf("Stats before the retry's due time = %+v", st)
	}
	env.Advance(time.Millisecond)
	d, err = q.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Attempt != 2 {
		t.Fatalf("attempt %d, want 2", d.Attempt)
	}
}

// RescheduleAt refuses a due time in the past of the clock, even one in
// the future of the real time.
func TestRescheduleAtChecksTheClock(t *testing.T) {
	env, _, dq, ctx := setup(t)
	id, err := dq.Offer(ctx, "a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	env.Advance(30 * time.Minute)
	past := time.Now().Add(10 * time.Minute) // real future, clock's past
	if err := dq.RescheduleAt(ctx, id, past); !errors.Is(err, blocking.ErrInvalidArgument) {
		t.Fatalf("RescheduleAt(the clock's past) = %v, want ErrInvalidArgument", err)
	}
	if err := dq.RescheduleAt(ctx, id, env.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	it, err := dq.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !it.DueAt.Equal(env.Now().Add(time.Minute)) {
		t.Fatalf("due at %v, want %v", it.DueAt, env.Now().Add(time.Minute))
	}
}

// Keys with a Redis TTL age with the clock: WithUniqueFor's window ends.
func TestUniqueWindowEndsWithClock(t *testing.T) {
	env, q, dq, ctx := setup(t)
	offer := func() error {
		_, err := dq.Offer(ctx, "a", 0, delayed.WithID("k"), delayed.WithUniqueFor(time.Hour))
		return err
	}
	if err := offer(); err != nil {
		t.Fatal(err)
	}
	if got, _ := receiveAll(ctx, t, q); len(got) != 1 {
		t.Fatalf("took %v", got)
	}
	if err := offer(); !errors.Is(err, delayed.ErrDuplicate) {
		t.Fatalf("offer within the window = %v, want ErrDuplicate", err)
	}
	env.Advance(time.Hour)
	if err := offer(); err != nil {
		t.Fatalf("offer after the window = %v", err)
	}
}

// Consume's handler sees what Advance made ready; WaitIdle waits for it.
func TestConsumeAfterAdvance(t *testing.T) {
	env, q, dq, ctx := setup(t)
	ctx, cancel := context.WithCancel(ctx)
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			got <- d.Value
			return nil
		}, blocking.WithConcurrency(4))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	for i := range 5 {
		if _, err := dq.Offer(ctx, fmt.Sprint(i), time.Duration(i+1)*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	env.Advance(3 * time.Hour)
	if err := env.WaitIdle(ctx, q); err != nil {
		t.Fatal(err)
	}
	if n := len(got); n != 3 {
		t.Fatalf("handled %d after 3 hours, want 3", n)
	}
	if st := stats(ctx, t, q); st.Processed != 3 || st.Delayed != 2 {
		t.Fatalf("Stats = %+v, want 3 processed, 2 delayed", st)
	}
}

// transfer.Run's workers on the Env's client are stepped by Advance too.
func TestTransferRun(t *testing.T) {
	env := redelaytest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	q := blocking.New[string](env.Client(), "orders")
	defer q.Close()
	dq := delayed.New(q, delayed.WithoutTransfer())
	defer dq.Close()
	if _, err := dq.Offer(ctx, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- transfer.Run(rctx, env.Client(), []string{"orders"}) }()
	defer func() {
		stop()
		if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	// transfer.Run registers its workers in its own goroutine: step until
	// it has (nothing else moves the item: the clock stands still).
	for {
		env.Advance(time.Minute)
		n, err := q.Size(ctx)
		if err != nil {
			t.Fatalf("transfer.Run never moved the item: %v", err)
		}
		if n == 1 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("transfer.Run never moved the item")
		case <-time.After(time.Millisecond):
		}
	}
	if v, err := q.Take(ctx); err != nil || v != "a" {
		t.Fatalf("Take = %q, %v", v, err)
	}
}

// The queues of every partition are stepped.
func TestPartitions(t *testing.T) {
	env, q, dq, ctx := setup(t, blocking.WithPartitions(4))
	for i := range 20 {
		if _, err := dq.Offer(ctx, fmt.Sprint(i), time.Duration(i+1)*time.Second, delayed.WithID(fmt.Sprint("id-", i))); err != nil {
			t.Fatal(err)
		}
	}
	env.Advance(10 * time.Second)
	if st := stats(ctx, t, q); st.Ready != 10 || st.Delayed != 10 {
		t.Fatalf("Stats = %+v, want 10 ready, 10 delayed", st)
	}
}

// A jump over several ticks of a schedule fires what its missed-tick
// policy says: the tick at the time the clock lands on is on time; those
// before it were missed.
func TestScheduleMissedTicks(t *testing.T) {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		missed delayed.MissedTicks
		want   []string
	}{
		{delayed.MissedAll, []string{"n@2026-12-05T03:00:00.000Z", "n@2026-12-06T03:00:00.000Z", "n@2026-12-07T03:00:00.000Z"}},
		{delayed.MissedLatest, []string{"n@2026-12-06T03:00:00.000Z", "n@2026-12-07T03:00:00.000Z"}},
		{delayed.MissedSkip, []string{"n@2026-12-07T03:00:00.000Z"}},
	} {
		t.Run(string(tc.missed), func(t *testing.T) {
			env := redelaytest.New(t, redelaytest.WithTime(start))
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			q := blocking.New[string](env.Client(), "reports")
			defer q.Close()
			dq := delayed.New(q)
			defer dq.Close()
			if err := dq.Schedule(ctx, "n", "0 3 * * *", "report", delayed.WithMissedTicks(tc.missed)); err != nil {
				t.Fatal(err)
			}
			env.Advance(0)
			env.AdvanceTo(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC))
			_, got := receiveAll(ctx, t, q)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ticks %v, want %v", got, tc.want)
			}
			infos, err := dq.Schedules(ctx)
			if err != nil || len(infos) != 1 {
				t.Fatalf("Schedules = %+v, %v", infos, err)
			}
			if want := time.Date(2026, 12, 8, 3, 0, 0, 0, time.UTC); !infos[0].Next.Equal(want) || infos[0].Overdue {
				t.Fatalf("Schedules: next %v (overdue %v), want %v", infos[0].Next, infos[0].Overdue, want)
			}
		})
	}
}

// An Env of Start returns Advance's errors; one of New fails the test.
func TestAdvanceRefusesGoingBack(t *testing.T) {
	env, err := redelaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	t0 := env.Now()
	if err := env.Advance(-time.Second); !errors.Is(err, blocking.ErrInvalidArgument) {
		t.Fatalf("Advance(-1s) = %v, want ErrInvalidArgument", err)
	}
	if err := env.AdvanceTo(t0.Add(-time.Second)); !errors.Is(err, blocking.ErrInvalidArgument) {
		t.Fatalf("AdvanceTo(the past) = %v, want ErrInvalidArgument", err)
	}
	if err := env.AdvanceTo(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, blocking.ErrInvalidArgument) {
		t.Fatalf("AdvanceTo(2300) = %v, want ErrInvalidArgument", err)
	}
	if !env.Now().Equal(t0) {
		t.Fatalf("the clock moved: %v, want %v", env.Now(), t0)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
}

// After Close, Advance returns an error and queues fail with one; nothing
// hangs or panics.
func TestAdvanceAfterClose(t *testing.T) {
	env, err := redelaytest.Start()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	q := blocking.New[string](env.Client(), "orders")
	dq := delayed.New(q)
	if _, err := dq.Offer(ctx, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := env.Close(); err != nil {
		t.Fatal(err)
	}
	if err := env.Advance(time.Minute); err == nil {
		t.Fatal("Advance after Close: no error")
	}
	if _, err := dq.Offer(ctx, "b", time.Minute); err == nil {
		t.Fatal("Offer after Close: no error")
	}
	if err := dq.Close(); err != nil {
		t.Error(err)
	}
	if err := q.Close(); err != nil {
		t.Error(err)
	}
}

// The clock stands still between Advance calls, and TIME reads it.
func TestClockStandsStill(t *testing.T) {
	start := time.Date(2030, 1, 2, 3, 4, 5, 6000, time.UTC)
	env := redelaytest.New(t, redelaytest.WithTime(start))
	ctx := context.Background()
	time.Sleep(5 * time.Millisecond)
	got, err := env.Client().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(start) || !env.Now().Equal(start) {
		t.Fatalf("TIME = %v, Now = %v, want %v", got, env.Now(), start)
	}
	env.Advance(time.Hour)
	if got, _ := env.Client().Time(ctx).Result(); !got.Equal(start.Add(time.Hour)) {
		t.Fatalf("TIME after an hour = %v", got)
	}
}
