package mover_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// slowSweep makes the sweep useless within a test's time frame, so an item
// arriving on time proves the timer and wake-up path.
const slowSweep = 30 * time.Second

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func takeWithin(t *testing.T, q *blocking.Queue[string], within time.Duration) string {
	t.Helper()
	v, ok, err := q.Poll(context.Background(), within)
	if err != nil || !ok {
		t.Fatalf("no item within %v (ok=%v, err=%v)", within, ok, err)
	}
	return v
}

// Without the sweep, items still fire on time: the transfer sleeps until the
// earliest due time and is woken when an earlier item is offered.
func TestEventDrivenWithoutSweep(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithSweepInterval(slowSweep))
		defer q.Close()
		dq := delayed.New(q)
		defer dq.Close()

		// An idle transfer (nothing pending) is asleep for the whole sweep.
		time.Sleep(100 * time.Millisecond)
		if _, err := dq.Offer(ctx, "late", 1500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		// A new earliest item must wake it.
		start := time.Now()
		if _, err := dq.Offer(ctx, "early", 300*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if v := takeWithin(t, q, 3*time.Second); v != "early" {
			t.Fatalf("first = %q", v)
		}
		if v := takeWithin(t, q, 3*time.Second); v != "late" {
			t.Fatalf("second = %q", v)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("took %v: the transfer waited for the sweep", el)
		}
	})
}

// Two queues on one client share one service; it stops with the last queue.
func TestServiceSharedAndReleased(t *testing.T) {
	rdb := redistest.Standalone(t)
	before, _ := mover.Services(rdb)
	q1 := blocking.New[int](rdb, redistest.QueueName(t))
	q2 := blocking.New[int](rdb, redistest.QueueName(t))
	d1, d2 := delayed.New(q1), delayed.New(q2)
	d1again := delayed.New(q1)
	total, queues := mover.Services(rdb)
	if total != before+1 || queues != 2 {
		t.Fatalf("services %d (before %d), queues %d; want one service with 2 queues", total, before, queues)
	}
	_ = d1.Close()
	if _, queues = mover.Services(rdb); queues != 2 {
		t.Fatalf("queue 1 stopped while another registration holds it: %d queues", queues)
	}
	_ = d1again.Close()
	if _, queues = mover.Services(rdb); queues != 1 {
		t.Fatalf("queues = %d after queue 1's last close, want 1", queues)
	}
	_ = d2.Close()
	if total, queues = mover.Services(rdb); total != before || queues != -1 {
		t.Fatalf("service not released: %d services, %d queues", total, queues)
	}
	_ = q1.Close()
	_ = q2.Close()
}

func TestRegisterValidates(t *testing.T) {
	rdb := redistest.Standalone(t)
	k, err := keys.New(redistest.QueueName(t))
	if err != nil {
		t.Fatal(err)
	}
	sq := store.New(rdb).Partition(k)
	for name, tg := range map[string]mover.Target{
		"batch too big": {Queue: sq, BatchSize: mover.MaxBatchSize + 1},
		"negative":      {Queue: sq, BatchSize: -1},
		"sweep":         {Queue: sq, Sweep: time.Microsecond},
		"attempts":      {Queue: sq, MaxAttempts: -1},
	} {
		if _, err := mover.Register(tg); err == nil {
			t.Errorf("%s: Register accepted %+v", name, tg)
		}
	}
	if _, err := mover.Register(mover.Target{}); err == nil {
		t.Error("Register accepted no queue")
	}
}

// The pub/sub connection dies (CLIENT KILL): go-redis reconnects and
// resubscribes, the resubscription triggers a run, and wake-ups work again.
func TestPubSubConnectionKilled(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithSweepInterval(slowSweep))
		defer q.Close()
		dq := delayed.New(q)
		defer dq.Close()
		time.Sleep(100 * time.Millisecond)

		killPubSub(t, rdb)
		time.Sleep(200 * time.Millisecond)
		if _, err := dq.Offer(ctx, "after-kill", 200*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		if v := takeWithin(t, q, 5*time.Second); v != "after-kill" {
			t.Fatalf("got %q", v)
		}
	})
}

func killPubSub(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	kill := func(ctx context.Context, c *redis.Client) error {
		return c.ClientKillByFilter(ctx, "TYPE", "pubsub").Err()
	}
	switch x := rdb.(type) {
	case *redis.Client:
		if err := kill(ctx, x); err != nil {
			t.Fatal(err)
		}
	case *redis.ClusterClient:
		if err := x.ForEachMaster(ctx, kill); err != nil {
			t.Fatal(err)
		}
	}
}

// Redis is killed and restarted (with AOF): the transfer logs the failure,
// retries, recovers, and every item offered before or after is delivered.
func TestRedisRestart(t *testing.T) {
	srv := redistest.StartServer(t, redistest.WithAOF())
	rdb := srv.Client(t)
	ctx := context.Background()
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithLogger(logger), blocking.WithSweepInterval(slowSweep))
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()

	for _, v := range []string{"a", "b", "c"} {
		if _, err := dq.Offer(ctx, v, 1500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond) // the transfer has heard of them and set its timer
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	// The items fall due while the server is down, and the outage outlasts
	// go-redis's own dial retries, so the transfer sees the failure.
	time.Sleep(4 * time.Second)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"a", "b", "c"} {
		if v := takeWithin(t, q, 10*time.Second); v != want {
			t.Fatalf("got %q, want %q", v, want)
		}
	}
	// Wake-ups work again after the restart (the sweep is too slow to help).
	if _, err := dq.Offer(ctx, "d", 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v := takeWithin(t, q, 5*time.Second); v != "d" {
		t.Fatalf("got %q", v)
	}
	out := logs.String()
	if !strings.Contains(out, "transfer failed") || !strings.Contains(out, "transfer recovered") {
		t.Fatalf("expected failure and recovery in the log, got:\n%s", out)
	}
}

// Wake-ups that coincide with the timer firing must not wedge the worker.
// Many short-delay offers make the two race constantly; the sweep is too slow
// to rescue a stuck worker, so every item arriving proves the wake path.
func TestWakeRacesTimer(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithSweepInterval(slowSweep))
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()
	const n = 300
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			if _, err := dq.Offer(ctx, "x", time.Duration(1+i%7)*time.Millisecond); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(i%3) * time.Millisecond)
		}
	})
	for i := range n {
		if _, ok, err := q.Poll(ctx, 5*time.Second); err != nil || !ok {
			t.Fatalf("item %d of %d never arrived (ok=%v, err=%v): the transfer is stuck", i, n, ok, err)
		}
	}
	wg.Wait()
}

// The worker's last stretch before a due time is slept with sleepPrecise:
// it must never return early (the script would find nothing due, and the
// item would wait for the next run).
func TestSleepPreciseNeverEarly(t *testing.T) {
	for _, d := range []time.Duration{0, 30 * time.Microsecond, 400 * time.Microsecond, 1900 * time.Microsecond} {
		for range 20 {
			start := time.Now()
			mover.SleepPrecise(d)
			if got := time.Since(start); got < d {
				t.Fatalf("SleepPrecise(%v) returned after %v", d, got)
			}
		}
	}
}
