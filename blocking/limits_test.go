package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
)

// This file proves the fleet-wide limits of Consume: WithRateLimit holds
// across processes, spreads starts evenly and does not poll;
// WithGlobalConcurrency is never exceeded, and a crashed process's share
// comes back when its leases expire.

// limFill offers n ready ints.
func limFill(t *testing.T, q *blocking.Queue[int], n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := q.Offer(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
}

// limProcesses runs one Consume per queue (each on a client of its own, as
// separate processes) until stop is closed, and returns when all ended.
func limProcesses(t *testing.T, qs []*blocking.Queue[int], h blocking.Handler[int], opts ...blocking.ConsumeOption) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, q := range qs {
		wg.Go(func() {
			if err := q.Consume(ctx, h, opts...); !errors.Is(err, context.Canceled) {
				t.Errorf("Consume: %v", err)
			}
		})
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// 3 processes, 50 starts/s for 10 s: 500 ± 5 %, spread evenly over the
// seconds, and the receive script runs about as often as items start (no
// busy loop). The 10 s begin a second after the first start: a first
// handler that starts late (a busy machine) would otherwise stretch the
// window over the slots before it.
func TestRateLimitAcrossProcesses(t *testing.T) {
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	const rate, seconds = 50, 10
	var qs []*blocking.Queue[int]
	for range 3 {
		q := blocking.New[int](redistest.NewClientLike(t, rdb), name)
		t.Cleanup(func() { _ = q.Close() })
		qs = append(qs, q)
	}
	limFill(t, qs[0], rate*seconds*3/2)

	var mu sync.Mutex
	var starts []time.Time
	stop := limProcesses(t, qs, func(_ context.Context, d *blocking.Delivery[int]) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		return nil
	}, blocking.WithRateLimit(rate, time.Second), blocking.WithConcurrency(4))
	redistest.WaitFor(t, 5*time.Second, "a first start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) > 0
	})
	mu.Lock()
	t0 := starts[0].Add(time.Second)
	mu.Unlock()
	time.Sleep(time.Until(t0))
	before := redistest.ReadCommandStat(t, rdb, "evalsha")
	time.Sleep(time.Until(t0.Add(seconds*time.Second + 200*time.Millisecond)))
	after := redistest.ReadCommandStat(t, rdb, "evalsha")
	stop()

	mu.Lock()
	defer mu.Unlock()
	buckets := make([]int, seconds)
	in := 0
	for _, s := range starts {
		if i := int(s.Sub(t0) / time.Second); !s.Before(t0) && i < seconds {
			buckets[i]++
			in++
		}
	}
	calls := after.Calls - before.Calls
	t.Logf("%d starts in %d s (want %d ± 5%%); per second %v; %d script calls (%.1f/s, all scripts of the queue)",
		in, seconds, rate*seconds, buckets, calls, float64(calls)/seconds)
	if lo, hi := rate*seconds*95/100, rate*seconds*105/100; in < lo || in > hi {
		t.Errorf("%d starts in %d s, want %d to %d", in, seconds, lo, hi)
	}
	for i, n := range buckets {
		if n < rate*70/100 || n > rate*130/100 {
			t.Errorf("second %d: %d starts, want about %d (all: %v)", i, n, rate, buckets)
		}
	}
	// A busy loop would call the script thousands of times a second; the
	// receive script runs about once per lease batch, the transfer and the
	// reclaimer a few times a second.
	if perSec := float64(calls) / seconds; perSec > 2*rate {
		t.Errorf("%.0f script calls per second for %d starts per second: polling?", perSec, rate)
	}
}

// The rate limit holds on the cluster too, and one Consume alone keeps it.
func TestRateLimitCluster(t *testing.T) {
	rdb := redistest.ClusterClient(t)
	name := redistest.QueueName(t)
	q := blocking.New[int](rdb, name)
	defer q.Close()
	q2 := blocking.New[int](redistest.NewClientLike(t, rdb), name)
	defer q2.Close()
	limFill(t, q, 100)
	var n atomic.Int64
	var first atomic.Int64
	stop := limProcesses(t, []*blocking.Queue[int]{q, q2}, func(context.Context, *blocking.Delivery[int]) error {
		first.CompareAndSwap(0, time.Now().UnixNano())
		n.Add(1)
		return nil
	}, blocking.WithRateLimit(20, time.Second), blocking.WithConcurrency(8))
	redistest.WaitFor(t, 5*time.Second, "a first start", func() bool { return n.Load() > 0 })
	// Counted from half a second after the first start, for 2 s (see
	// TestRateLimitAcrossProcesses on why not from the first start).
	t0 := time.Unix(0, first.Load()).Add(500 * time.Millisecond)
	time.Sleep(time.Until(t0))
	from := n.Load()
	time.Sleep(time.Until(t0.Add(2 * time.Second)))
	got := n.Load() - from
	stop()
	// 2 s at 20/s: 40 starts, and never a burst of the 100 ready items.
	if got < 30 || got > 50 {
		t.Fatalf("%d starts in 2 s at 20/s", got)
	}
}

// Global concurrency 5 across 3 processes of 4 handlers each, with slow
// handlers: never more than 5 in flight, counted by the handlers and
// sampled from Redis; every item handled once.
func TestGlobalConcurrency(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		const limit, items = 5, 60
		var qs []*blocking.Queue[int]
		for range 3 {
			q := blocking.New[int](redistest.NewClientLike(t, rdb), name)
			t.Cleanup(func() { _ = q.Close() })
			qs = append(qs, q)
		}
		limFill(t, qs[0], items)
		var running, peak atomic.Int64
		var mu sync.Mutex
		seen := map[int]int{}
		stop := limProcesses(t, qs, func(_ context.Context, d *blocking.Delivery[int]) error {
			n := running.Add(1)
			defer running.Add(-1)
			for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
			}
			time.Sleep(20 * time.Millisecond)
			mu.Lock()
			seen[d.Value]++
			mu.Unlock()
			return nil
		}, blocking.WithGlobalConcurrency(limit), blocking.WithConcurrency(4))
		leases := redistest.KeysOf(name).Leases
		var sampled int64
		deadline := time.Now().Add(30 * time.Second)
		for {
			if n := rdb.ZCard(context.Background(), leases).Val(); n > sampled {
				sampled = n
			}
			mu.Lock()
			done := len(seen) == items
			mu.Unlock()
			if done || time.Now().After(deadline) {
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		stop()
		t.Logf("peak in flight: %d handlers, %d leases sampled (limit %d)", peak.Load(), sampled, limit)
		if peak.Load() > limit || sampled > limit {
			t.Errorf("in flight: %d handlers, %d leases; limit %d", peak.Load(), sampled, limit)
		}
		if peak.Load() < 2 {
			t.Errorf("peak of %d handlers: the limit of %d was not used", peak.Load(), limit)
		}
		if len(seen) != items {
			t.Fatalf("%d of %d items handled", len(seen), items)
		}
		for v, c := range seen {
			if c != 1 {
				t.Errorf("item %d handled %d times", v, c)
			}
		}
	})
}

// Consumers waiting for a share of WithGlobalConcurrency do not poll: with
// the limit held by handlers that do not return and items ready, three
// processes of four handlers each make a few script calls and blocking
// waits a second (their bounded waits for a share, the transfer's sweep,
// the reclaimer, the lease extensions), not a loop's hundreds. A count on
// a server of the test's own, not a timing.
func TestGlobalConcurrencyWaitersDoNotPoll(t *testing.T) {
	srv := redistest.StartServer(t)
	name := redistest.QueueName(t)
	const limit, seconds = 2, 3
	var qs []*blocking.Queue[int]
	for range 3 {
		q := blocking.New[int](srv.Client(t), name)
		t.Cleanup(func() { _ = q.Close() })
		qs = append(qs, q)
	}
	limFill(t, qs[0], 20)
	var running atomic.Int64
	release := make(chan struct{})
	stop := limProcesses(t, qs, func(_ context.Context, d *blocking.Delivery[int]) error {
		running.Add(1)
		<-release
		return nil
	}, blocking.WithGlobalConcurrency(limit), blocking.WithConcurrency(4))
	defer stop()
	defer close(release)
	redistest.WaitFor(t, 10*time.Second, "the limit in use", func() bool { return running.Load() == limit })
	// The start-up work (registry, first transfer runs) is over in a second.
	time.Sleep(time.Second)
	admin := srv.Client(t)
	before := redistest.ReadCommandStats(t, admin)
	time.Sleep(seconds * time.Second)
	after := redistest.ReadCommandStats(t, admin)
	calls, _ := redistest.CommandCalls(before, after)
	// Scripts and blocking waits are sent by clients only (the counts of
	// other commands include those the scripts run).
	sent := calls["evalsha"] + calls["eval"] + calls["blpop"] + calls["blmove"]
	t.Logf("%d script calls and blocking waits in %d s while waiting for a share (all commands, scripts' included: %v)", sent, seconds, calls)
	if running.Load() != limit {
		t.Fatalf("%d handlers running, limit %d", running.Load(), limit)
	}
	// A waiter that polled would call the receive script hundreds of times
	// a second; the 3 processes' bounded waits, lease extensions, transfer
	// sweeps and reclaimers make about 30.
	if perSec := float64(sent) / seconds; perSec > 60 {
		t.Errorf("%.0f script calls and waits per second while consumers wait for a share of the limit: polling?", perSec)
	}
}

// A process that dies holding every lease the limit allows does not stop
// the fleet: its share comes back when its leases expire.
func TestGlobalConcurrencyCrashedShareReturns(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		const limit = 3
		opts := []blocking.Option{blocking.WithVisibilityTimeout(300 * time.Millisecond), blocking.WithSweepInterval(100 * time.Millisecond)}
		dead := blocking.New[int](redistest.NewClientLike(t, rdb), name, opts...)
		q := blocking.New[int](redistest.NewClientLike(t, rdb), name, opts...)
		defer q.Close()
		limFill(t, q, 10)
		// The crashed process: it leased 3 and will never settle them.
		held, err := dead.ReceiveBatch(ctx, limit)
		if err != nil || len(held) != limit {
			t.Fatalf("ReceiveBatch: %d, %v", len(held), err)
		}
		_ = dead.Close() // stops its background work; the leases stay
		var mu sync.Mutex
		var got []int
		stop := limProcesses(t, []*blocking.Queue[int]{q}, func(_ context.Context, d *blocking.Delivery[int]) error {
			mu.Lock()
			got = append(got, d.Value)
			mu.Unlock()
			return nil
		}, blocking.WithGlobalConcurrency(limit), blocking.WithConcurrency(2))
		redistest.WaitFor(t, 10*time.Second, "every item handled", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(got) == 10
		})
		stop()
		slices.Sort(got)
		if fmt.Sprint(got) != fmt.Sprint([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}) {
			t.Fatalf("handled %v", got)
		}
	})
}

func TestLimitOptions(t *testing.T) {
	rdb := redistest.Standalone(t)
	q := blocking.New[int](rdb, redistest.QueueName(t))
	defer q.Close()
	h := func(context.Context, *blocking.Delivery[int]) error { return nil }
	for _, opt := range []blocking.ConsumeOption{
		blocking.WithRateLimit(0, time.Second),
		blocking.WithRateLimit(10, 0),
		blocking.WithRateLimit(1e9, time.Millisecond),
		blocking.WithGlobalConcurrency(0),
	} {
		if err := q.Consume(context.Background(), h, opt); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Errorf("Consume with a bad limit: %v, want ErrInvalidArgument", err)
		}
	}
}
