package blocking_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// This file proves Pause and Resume (across goroutines, clients, OS
// processes and Redis restarts), and Peek, ReceiveBatch, TakeBatch, Purge,
// Stats and the argument checks of the blocking queue's new operations.

// pzKnown is how long after a Pause by another process a consumer process
// surely sees it even if the notification were lost: the transfer's sweep
// interval (1 s), plus slack for a loaded machine.
const pzKnown = 1500 * time.Millisecond

// pzResult is what a call made in a goroutine returned.
type pzResult struct {
	v   string
	err error
	at  time.Time
}

// pzGo runs f in a goroutine and returns its result's channel.
func pzGo(f func() (string, error)) <-chan pzResult {
	ch := make(chan pzResult, 1)
	go func() {
		v, err := f()
		ch <- pzResult{v, err, time.Now()}
	}()
	return ch
}

func pzStats(t *testing.T, q *blocking.Queue[string]) blocking.Stats {
	t.Helper()
	st, err := q.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	st.Eviction = "" // the server's, not the queue's
	return st
}

// The child side of TestPauseAcrossProcesses: run only when the parent
// sets REDELAY_PAUSE_CHILD=<addr>,<queue>. It consumes the queue and
// prints every delivery (value, attempt, Unix ns when its handler started)
// until it is killed.
func TestPauseChildProcess(t *testing.T) {
	spec := os.Getenv("REDELAY_PAUSE_CHILD")
	if spec == "" {
		return // not a child
	}
	addr, name, _ := strings.Cut(spec, ",")
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	q := blocking.New[string](rdb, name)
	err := q.Consume(context.Background(), func(_ context.Context, d *blocking.Delivery[string]) error {
		fmt.Printf("DELIVERED %s %d %d\n", d.Value, d.Attempt, time.Now().UnixNano())
		return nil
	})
	fmt.Printf("ERROR %v\n", err)
	os.Exit(1)
}

type pzEvent struct {
	value   string
	attempt int
	at      time.Time
}

// A consumer in another OS process (Consume) stops handing out items once
// this process pauses the queue, and goes on after Resume: the 50 items
// offered while paused are all delivered, exactly once, after Resume, and
// none of them before.
func TestPauseAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	name := redistest.QueueName(t)

	cmd := redistest.Rerun(ctx, "TestPauseChildProcess", "REDELAY_PAUSE_CHILD="+srv.Addr()+","+name)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu     sync.Mutex
		events []pzEvent
		other  []string
	)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			var ev pzEvent
			var ns int64
			if _, err := fmt.Sscanf(line, "DELIVERED %s %d %d", &ev.value, &ev.attempt, &ns); err == nil {
				ev.at = time.Unix(0, ns)
				mu.Lock()
				events = append(events, ev)
				mu.Unlock()
				continue
			}
			mu.Lock()
			other = append(other, line)
			mu.Unlock()
		}
	}()
	var killOnce sync.Once
	kill := func() {
		killOnce.Do(func() {
			_ = cmd.Process.Kill()
			<-readerDone // the pipe ends with the child
			_ = cmd.Wait()
		})
	}
	t.Cleanup(kill)
	snapshot := func() []pzEvent {
		mu.Lock()
		defer mu.Unlock()
		return append([]pzEvent(nil), events...)
	}

	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	if _, err := q.Offer(ctx, "first"); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 60*time.Second, "the child consumes a first item", func() bool {
		return len(snapshot()) >= 1
	})

	pauseSent := time.Now()
	if err := q.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	t.Logf("Pause took %v", paused.Sub(pauseSent))
	const n = 50
	for i := range n {
		if _, err := q.Offer(ctx, fmt.Sprintf("item-%02d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// While paused: nothing is handed out. The child's receivers are
	// blocked waiting for items; each offer wakes one, whose lease script
	// finds the queue paused and gives the item back.
	time.Sleep(3 * time.Second)
	redistest.WaitFor(t, 10*time.Second, "the 50 items ready, none leased or claimed", func() bool {
		st := pzStats(t, q)
		return st.Ready == n && st.Inflight == 0 && st.Paused
	})
	resumed := time.Now()
	for _, ev := range snapshot() {
		if ev.value == "first" {
			continue
		}
		// The strong claim: every item was offered after Pause returned, so
		// the lease script (which checks the flag) never hands one out.
		t.Errorf("%s delivered %v after Pause returned, while paused (documented bound: nothing delivered from 1 s after Pause)",
			ev.value, ev.at.Sub(paused))
		if ev.at.Sub(paused) > time.Second {
			t.Errorf("%s: delivery started %v after the Pause call", ev.value, ev.at.Sub(paused))
		}
	}
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 60*time.Second, "the child delivers the 50 items after Resume", func() bool {
		return len(snapshot()) >= n+1
	})
	time.Sleep(time.Second) // anything more would be a duplicate
	counts := map[string]int{}
	var last time.Time
	for _, ev := range snapshot() {
		counts[ev.value]++
		if ev.attempt != 1 {
			t.Errorf("%s delivered with attempt %d", ev.value, ev.attempt)
		}
		if ev.value != "first" {
			if ev.at.Before(resumed.Add(-time.Millisecond)) {
				t.Errorf("%s delivered %v before Resume", ev.value, resumed.Sub(ev.at))
			}
			if ev.at.After(last) {
				last = ev.at
			}
		}
	}
	for i := range n {
		if v := fmt.Sprintf("item-%02d", i); counts[v] != 1 {
			t.Errorf("%s delivered %d times, want once", v, counts[v])
		}
	}
	if len(counts) != n+1 {
		t.Errorf("delivered %d distinct values, want %d: %v", len(counts), n+1, counts)
	}
	t.Logf("all 50 delivered within %v of Resume", last.Sub(resumed).Round(time.Millisecond))
	redistest.WaitFor(t, 10*time.Second, "every delivery acked", func() bool {
		st := pzStats(t, q)
		return st.Ready == 0 && st.Inflight == 0 && st.Retry == 0 && st.Dead == 0 && !st.Paused
	})
	kill()
	mu.Lock()
	defer mu.Unlock()
	for _, l := range other {
		if strings.HasPrefix(l, "ERROR") {
			t.Errorf("child: %s", l)
		}
	}
}

// The pause flag lives in Redis: it survives a Redis restart (with AOF)
// and the restart of the processes. A new queue object on a new client
// sees Stats().Paused, and its Poll gets nothing while an item is ready;
// after Resume it gets the item.
func TestPauseSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, redistest.WithAOF())
	ctx := context.Background()
	name := redistest.QueueName(t)
	producer := blocking.New[string](srv.Client(t), name)
	if err := producer.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := producer.Offer(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	// A consumer that was running across the restart.
	old := blocking.New[string](srv.Client(t), name)
	t.Cleanup(func() { _ = old.Close() })
	if _, ok, err := old.Poll(ctx, 200*time.Millisecond); err != nil || ok {
		t.Fatalf("Poll before the restart = %v, %v", ok, err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}

	for round := range 2 { // two process restarts
		q := blocking.New[string](srv.Client(t), name)
		st, err := q.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Paused || st.Ready != 1 {
			t.Fatalf("round %d: Stats after the restart = %+v, want paused with 1 ready", round, st)
		}
		start := time.Now()
		v, ok, err := q.Poll(ctx, 500*time.Millisecond)
		if err != nil || ok {
			t.Fatalf("round %d: Poll while paused = %q, %v, %v", round, v, ok, err)
		}
		if took := time.Since(start); took < 450*time.Millisecond {
			t.Fatalf("round %d: Poll while paused returned after %v, before its timeout", round, took)
		}
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		if d, err := q.Receive(rctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("round %d: Receive while paused = %+v, %v", round, d, err)
		}
		cancel()
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, err := old.Poll(ctx, 300*time.Millisecond); err != nil || ok {
		t.Fatalf("Poll of the consumer that ran across the restart = %v, %v", ok, err)
	}

	q := blocking.New[string](srv.Client(t), name)
	t.Cleanup(func() { _ = q.Close() })
	if err := q.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	v, ok, err := q.Poll(ctx, 5*time.Second)
	if err != nil || !ok || v != "x" {
		t.Fatalf("Poll after Resume = %q, %v, %v", v, ok, err)
	}
	if st := pzStats(t, q); st.Paused || st.Ready != 0 {
		t.Fatalf("Stats after Resume = %+v", st)
	}
}

// While paused: a Take already waiting stays blocked (no error) when an
// item arrives, and returns it after Resume; Poll returns ok=false, nil at
// its timeout; Receive, ReceiveBatch and TakeBatch return their ctx's
// error; Close makes a waiting Take return ErrClosed promptly. Nothing is
// taken meanwhile.
func TestPausedWaiters(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		admin := blocking.New[string](redistest.NewClientLike(t, rdb), name) // another process
		t.Cleanup(func() { _ = admin.Close() })
		if _, ok, err := q.Poll(ctx, 0); err != nil || ok {
			t.Fatal(ok, err)
		}

		take := pzGo(func() (string, error) { return q.Take(ctx) })
		time.Sleep(200 * time.Millisecond) // Take now waits for an item
		if err := admin.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		if err := admin.Pause(ctx); err != nil { // harmless twice
			t.Fatal(err)
		}
		time.Sleep(pzKnown)
		if _, err := admin.Offer(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-take:
			t.Fatalf("Take returned %q, %v while paused", r.v, r.err)
		case <-time.After(1500 * time.Millisecond):
		}
		redistest.WaitFor(t, 5*time.Second, "the item ready, not claimed", func() bool {
			st := pzStats(t, admin)
			return st.Paused && st.Ready == 1 && st.Inflight == 0
		})

		start := time.Now()
		if v, ok, err := q.Poll(ctx, 400*time.Millisecond); err != nil || ok {
			t.Fatalf("Poll while paused = %q, %v, %v", v, ok, err)
		}
		if took := time.Since(start); took < 390*time.Millisecond {
			t.Fatalf("Poll while paused returned after %v, before its timeout", took)
		}
		if v, ok, err := q.Poll(ctx, 0); err != nil || ok {
			t.Fatalf("Poll(0) while paused = %q, %v, %v", v, ok, err)
		}
		for what, call := range map[string]func(context.Context) error{
			"Receive":      func(ctx context.Context) error { _, err := q.Receive(ctx); return err },
			"ReceiveBatch": func(ctx context.Context) error { _, err := q.ReceiveBatch(ctx, 5); return err },
			"TakeBatch":    func(ctx context.Context) error { _, err := q.TakeBatch(ctx, 5); return err },
		} {
			rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			err := call(rctx)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s while paused = %v, want context.DeadlineExceeded", what, err)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := call(cctx); !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled ctx while paused = %v, want context.Canceled", what, err)
			}
		}
		if st := pzStats(t, admin); st.Ready != 1 || st.Inflight != 0 {
			t.Fatalf("Stats after the calls while paused = %+v", st)
		}

		if err := admin.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-take:
			if r.err != nil || r.v != "a" {
				t.Fatalf("Take after Resume = %q, %v", r.v, r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting Take did not return within 5s of Resume")
		}

		// Close while paused: a waiting Take returns ErrClosed promptly.
		if err := admin.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pzKnown)
		if _, err := admin.Offer(ctx, "b"); err != nil {
			t.Fatal(err)
		}
		take = pzGo(func() (string, error) { return q.Take(ctx) })
		select {
		case r := <-take:
			t.Fatalf("Take returned %q, %v while paused", r.v, r.err)
		case <-time.After(500 * time.Millisecond):
		}
		closed := time.Now()
		if err := q.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-take:
			if !errors.Is(r.err, blocking.ErrClosed) {
				t.Fatalf("Take after Close = %q, %v; want ErrClosed", r.v, r.err)
			}
			if took := r.at.Sub(closed); took > time.Second {
				t.Fatalf("Take returned %v after Close", took)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the waiting Take did not return within 5s of Close")
		}
		if st := pzStats(t, admin); st.Ready != 1 || !st.Paused {
			t.Fatalf("Stats after Close = %+v, want b still ready", st)
		}
		if err := admin.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if err := admin.Resume(ctx); err != nil { // harmless twice
			t.Fatal(err)
		}
		if v, ok, err := admin.Poll(ctx, 5*time.Second); err != nil || !ok || v != "b" {
			t.Fatalf("Poll after Resume = %q, %v, %v", v, ok, err)
		}
	})
}

// While paused, the transfers and the reclaiming of expired leases go on:
// a delayed item falling due becomes ready on time, and an item whose
// lease expires is made ready again (its failed delivery counted); both
// are delivered after Resume, exactly once.
func TestPauseKeepsTransfersAndReclaim(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		// The second client first: NewClientLike copies the options of a
		// live client, which go-redis may be writing.
		admin := blocking.New[string](redistest.NewClientLike(t, rdb), name)
		t.Cleanup(func() { _ = admin.Close() })
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(800*time.Millisecond))
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })

		if _, err := q.Offer(ctx, "leased", blocking.WithID("leased")); err != nil {
			t.Fatal(err)
		}
		lost := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if lost.ID != "leased" || lost.Attempt != 1 {
			t.Fatalf("received %+v", lost)
		}
		if err := admin.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, "due", 500*time.Millisecond, delayed.WithID("due")); err != nil {
			t.Fatal(err)
		}
		it, err := dq.Get(ctx, "due")
		if err != nil {
			t.Fatal(err)
		}
		var readyAt time.Time
		redistest.WaitFor(t, 10*time.Second, "both items ready while paused", func() bool {
			items, err := q.Peek(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range items {
				if p.ID == "due" && readyAt.IsZero() {
					readyAt = time.Now()
				}
			}
			return len(items) == 2
		})
		if readyAt.Before(it.DueAt) {
			t.Fatalf("the delayed item was ready %v before its due time", it.DueAt.Sub(readyAt))
		}
		if late := readyAt.Sub(it.DueAt); late > 2*time.Second {
			t.Fatalf("the delayed item was ready %v after its due time while paused", late)
		}
		st := pzStats(t, admin)
		if !st.Paused || st.Ready != 2 || st.Inflight != 0 || st.Delayed != 0 {
			t.Fatalf("Stats while paused = %+v", st)
		}
		items, err := q.Peek(ctx, 10)
		if err != nil || len(items) != 2 || items[0].ID != "leased" || items[0].Attempt != 1 || items[1].ID != "due" || items[1].Attempt != 0 {
			t.Fatalf("Peek while paused = %+v, %v; want the reclaimed item first (one failed attempt), then the due one", items, err)
		}
		if err := lost.Ack(ctx); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("Ack of the expired lease = %v, want ErrLeaseLost", err)
		}
		seedtest.ExpectNothing(t, q, 300*time.Millisecond)

		if err := admin.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for range 2 {
			d := seedtest.ReceiveWithin(t, q, 5*time.Second)
			got[d.ID] = d.Attempt
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got["leased"] != 2 || got["due"] != 1 {
			t.Fatalf("delivered after Resume: %v, want leased (attempt 2) and due (attempt 1)", got)
		}
		seedtest.ExpectNothing(t, q, time.Second)
		if st := pzStats(t, admin); st.Ready != 0 || st.Inflight != 0 || st.Retry != 0 || st.Dead != 0 || st.Delayed != 0 {
			t.Fatalf("Stats at the end = %+v", st)
		}
	})
}

// ReceiveBatch leases exactly what it returns (the rest stays ready), and
// TakeBatch removes exactly what it returns, oldest first.
func TestBatchesTakeExactlyWhatTheyReturn(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		for i := range 25 {
			if _, err := q.Offer(ctx, fmt.Sprintf("v%02d", i)); err != nil {
				t.Fatal(err)
			}
		}
		ds, err := q.ReceiveBatch(ctx, 10)
		if err != nil || len(ds) != 10 {
			t.Fatalf("ReceiveBatch(10) = %d, %v", len(ds), err)
		}
		for i, d := range ds {
			if d.Value != fmt.Sprintf("v%02d", i) || d.Attempt != 1 {
				t.Fatalf("ReceiveBatch[%d] = %q attempt %d", i, d.Value, d.Attempt)
			}
		}
		if st := pzStats(t, q); st.Inflight != 10 || st.Ready != 15 {
			t.Fatalf("Stats after ReceiveBatch(10) = %+v, want 10 in flight, 15 ready", st)
		}
		if n := keyLen(t, rdb, name, "leases"); n != 10 {
			t.Fatalf("%d leases, want 10", n)
		}
		vs, err := q.TakeBatch(ctx, 10)
		if err != nil || len(vs) != 10 || vs[0] != "v10" || vs[9] != "v19" {
			t.Fatalf("TakeBatch(10) = %q, %v", vs, err)
		}
		if st := pzStats(t, q); st.Inflight != 10 || st.Ready != 5 {
			t.Fatalf("Stats after TakeBatch(10) = %+v, want 10 in flight, 5 ready", st)
		}
		rest, err := q.ReceiveBatch(ctx, 256)
		if err != nil || len(rest) != 5 || rest[0].Value != "v20" || rest[4].Value != "v24" {
			t.Fatalf("ReceiveBatch(256) = %d, %v", len(rest), err)
		}
		if st := pzStats(t, q); st.Inflight != 15 || st.Ready != 0 {
			t.Fatalf("Stats after the last ReceiveBatch = %+v", st)
		}
		for _, d := range append(ds, rest...) {
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if st := pzStats(t, q); st.Inflight != 0 || st.Ready != 0 {
			t.Fatalf("Stats after the acks = %+v", st)
		}
		// An empty queue: a batch waits for the first item, then returns
		// what is ready.
		res := pzGo(func() (string, error) {
			vs, err := q.TakeBatch(ctx, 3)
			return strings.Join(vs, ","), err
		})
		time.Sleep(200 * time.Millisecond)
		if _, err := q.Offer(ctx, "late"); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-res:
			if r.err != nil || r.v != "late" {
				t.Fatalf("waiting TakeBatch = %q, %v", r.v, r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiting TakeBatch did not return")
		}
	})
}

// pzBatchRun offers n items while four goroutines (on two clients) take
// them in batches of up to 10 with batch, and returns how many times each
// item came back.
func pzBatchRun(t *testing.T, rdb redis.UniversalClient, name string, n int,
	batch func(ctx context.Context, q *blocking.Queue[string]) ([]string, error),
) map[string]int {
	t.Helper()
	ctx := context.Background()
	qs := []*blocking.Queue[string]{
		blocking.New[string](rdb, name),
		blocking.New[string](redistest.NewClientLike(t, rdb), name),
	}
	t.Cleanup(func() {
		for _, q := range qs {
			_ = q.Close()
		}
	})
	var mu sync.Mutex
	seen := map[string]int{}
	total := 0
	all := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for cctx.Err() == nil {
				vs, err := batch(cctx, qs[g%2])
				if err != nil {
					if cctx.Err() == nil {
						t.Errorf("batch: %v", err)
					}
					return
				}
				if len(vs) < 1 || len(vs) > 10 {
					t.Errorf("a batch of %d items, want 1..10", len(vs))
				}
				mu.Lock()
				for _, v := range vs {
					seen[v]++
				}
				total += len(vs)
				if total == n {
					close(all)
				}
				mu.Unlock()
			}
		})
	}
	for i := range n {
		if _, err := qs[i%2].Offer(ctx, fmt.Sprintf("i%03d", i)); err != nil {
			t.Fatal(err)
		}
		if i%20 == 0 {
			time.Sleep(5 * time.Millisecond) // let waiting consumers claim some
		}
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Error("not every item came back within 30s")
	}
	time.Sleep(500 * time.Millisecond) // anything more would be a duplicate
	cancel()
	wg.Wait()
	return seen
}

// Four goroutines on two clients ReceiveBatch(10) while 200 items are
// offered: every item exactly once, nothing left leased or claimed.
func TestReceiveBatchConcurrentExactlyOnce(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		const n = 200
		name := redistest.QueueName(t)
		seen := pzBatchRun(t, rdb, name, n, func(ctx context.Context, q *blocking.Queue[string]) ([]string, error) {
			ds, err := q.ReceiveBatch(ctx, 10)
			if err != nil {
				return nil, err
			}
			vs := make([]string, len(ds))
			for i, d := range ds {
				vs[i] = d.Value
				if d.Attempt != 1 {
					t.Errorf("%s delivered with attempt %d", d.Value, d.Attempt)
				}
				if err := d.Ack(context.WithoutCancel(ctx)); err != nil {
					t.Errorf("ack %s: %v", d.Value, err)
				}
			}
			return vs, nil
		})
		pzExactlyOnce(t, seen, n)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		redistest.WaitFor(t, 10*time.Second, "nothing left", func() bool {
			st := pzStats(t, q)
			return st.Ready == 0 && st.Inflight == 0 && st.Retry == 0
		})
		if n := keyLen(t, rdb, name, "leases"); n != 0 {
			t.Fatalf("%d leases left", n)
		}
	})
}

// The same with TakeBatch(10).
func TestTakeBatchConcurrentExactlyOnce(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		const n = 200
		name := redistest.QueueName(t)
		seen := pzBatchRun(t, rdb, name, n, func(ctx context.Context, q *blocking.Queue[string]) ([]string, error) {
			return q.TakeBatch(ctx, 10)
		})
		pzExactlyOnce(t, seen, n)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		redistest.WaitFor(t, 10*time.Second, "nothing left", func() bool {
			st := pzStats(t, q)
			return st.Ready == 0 && st.Inflight == 0
		})
	})
}

func pzExactlyOnce(t *testing.T, seen map[string]int, n int) {
	t.Helper()
	for i := range n {
		if v := fmt.Sprintf("i%03d", i); seen[v] != 1 {
			t.Errorf("%s came back %d times, want once", v, seen[v])
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct values came back, want %d", len(seen), n)
	}
}

// Peek reads without removing; Purge drops the ready items only and
// returns their count; on DeadLetters() it empties the dead letters.
func TestPeekAndPurge(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
		if st := pzStats(t, q); st != (blocking.Stats{}) {
			t.Fatalf("Stats of a new queue = %+v", st)
		}
		if n, err := q.Purge(ctx); err != nil || n != 0 {
			t.Fatalf("Purge of an empty queue = %d, %v", n, err)
		}
		if items, err := q.Peek(ctx, 5); err != nil || len(items) != 0 {
			t.Fatalf("Peek of an empty queue = %+v, %v", items, err)
		}
		for i := range 7 {
			if _, err := q.Offer(ctx, fmt.Sprintf("p%d", i), blocking.WithID(fmt.Sprintf("id%d", i)),
				blocking.WithHeaders(map[string]string{"n": strconv.Itoa(i)})); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := dq.Offer(ctx, "later", time.Hour, delayed.WithID("later")); err != nil {
			t.Fatal(err)
		}
		first, err := q.Peek(ctx, 3)
		if err != nil || len(first) != 3 {
			t.Fatalf("Peek(3) = %+v, %v", first, err)
		}
		for i, it := range first {
			if it.Value != fmt.Sprintf("p%d", i) || it.ID != fmt.Sprintf("id%d", i) || it.Attempt != 0 ||
				it.Headers["n"] != strconv.Itoa(i) || it.DueAt.IsZero() || it.EnqueuedAt.IsZero() {
				t.Fatalf("Peek[%d] = %+v", i, it)
			}
		}
		all, err := q.Peek(ctx, blocking.MaxPage)
		if err != nil || len(all) != 7 || all[6].Value != "p6" {
			t.Fatalf("Peek(MaxPage) = %d, %v", len(all), err)
		}
		again, err := q.Peek(ctx, 3)
		if err != nil || fmt.Sprint(again) != fmt.Sprint(first) {
			t.Fatalf("a second Peek = %+v, %v; want %+v", again, err, first)
		}
		if n, _ := q.Size(ctx); n != 7 {
			t.Fatalf("Size after Peek = %d, want 7", n)
		}
		// Bytes that cannot be decoded are left out of a Peek, not removed.
		pushRaw(t, rdb, name, []byte("garbage"))
		if items, err := q.Peek(ctx, 10); err != nil || len(items) != 7 {
			t.Fatalf("Peek with garbage = %d items, %v", len(items), err)
		}

		d0 := seedtest.ReceiveWithin(t, q, 5*time.Second) // p0
		if err := d0.Nack(ctx, 0); err != nil {           // max attempts 1: dead
			t.Fatal(err)
		}
		d1 := seedtest.ReceiveWithin(t, q, 5*time.Second) // p1, kept leased
		if d0.Value != "p0" || d1.Value != "p1" {
			t.Fatalf("received %q, %q", d0.Value, d1.Value)
		}
		st := pzStats(t, q)
		if st.Ready != 6 || st.Dead != 1 || st.Inflight != 1 || st.Delayed != 1 {
			t.Fatalf("Stats before Purge = %+v", st)
		}
		if n, err := q.Purge(ctx); err != nil || n != 6 {
			t.Fatalf("Purge = %d, %v; want 6 (p2..p6 and the garbage)", n, err)
		}
		if n, err := q.Purge(ctx); err != nil || n != 0 {
			t.Fatalf("second Purge = %d, %v", n, err)
		}
		st = pzStats(t, q)
		if st.Ready != 0 || st.Dead != 1 || st.Inflight != 1 || st.Delayed != 1 || st.Latency != 0 {
			t.Fatalf("Stats after Purge = %+v; want only the ready items gone", st)
		}
		if ok, err := dq.Contains(ctx, "later"); err != nil || !ok {
			t.Fatalf("Contains(later) after Purge = %v, %v", ok, err)
		}
		if err := d1.Ack(ctx); err != nil {
			t.Fatalf("Ack of a leased item after Purge: %v", err)
		}
		dead := q.DeadLetters()
		if items, err := dead.Peek(ctx, 10); err != nil || len(items) != 1 || items[0].Value != "p0" {
			t.Fatalf("DeadLetters().Peek = %+v, %v", items, err)
		}
		if n, err := dead.Purge(ctx); err != nil || n != 1 {
			t.Fatalf("DeadLetters().Purge = %d, %v", n, err)
		}
		if n, err := dead.Purge(ctx); err != nil || n != 0 {
			t.Fatalf("second DeadLetters().Purge = %d, %v", n, err)
		}
		if st := pzStats(t, q); st.Dead != 0 || st.Delayed != 1 {
			t.Fatalf("Stats after purging the dead letters = %+v", st)
		}
	})
}

// Every field of Stats, read at one instant on the server's clock.
func TestStatsFields(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		admin := blocking.New[string](redistest.NewClientLike(t, rdb), name)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(2))
		dq := delayed.New(q, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = dq.Close(); _ = q.Close(); _ = admin.Close() })

		if st := pzStats(t, q); st != (blocking.Stats{}) {
			t.Fatalf("Stats of a new queue = %+v", st)
		}
		if _, err := dq.Offer(ctx, "d2h", 2*time.Hour, delayed.WithID("d2h")); err != nil {
			t.Fatal(err)
		}
		if _, err := dq.Offer(ctx, "d1h", time.Hour, delayed.WithID("d1h")); err != nil {
			t.Fatal(err)
		}
		d1h, err := dq.Get(ctx, "d1h")
		if err != nil {
			t.Fatal(err)
		}
		st := pzStats(t, q)
		if st.Delayed != 2 || !st.NextDue.Equal(d1h.DueAt) || st.Ready != 0 || st.Latency != 0 {
			t.Fatalf("Stats with two delayed = %+v, want NextDue %v", st, d1h.DueAt)
		}

		// A retry due in 30 minutes becomes the next due.
		if _, err := q.Offer(ctx, "retry"); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		sent := time.Now()
		if err := d.Nack(ctx, 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		returned := time.Now()
		st = pzStats(t, q)
		lo, hi := sent.Add(30*time.Minute).Add(-time.Millisecond), returned.Add(30*time.Minute).Add(time.Millisecond)
		if st.Retry != 1 || st.NextDue.Before(lo) || st.NextDue.After(hi) || st.Inflight != 0 {
			t.Fatalf("Stats with a retry = %+v, want NextDue in [%v, %v]", st, lo, hi)
		}

		// A dead letter: two failed attempts.
		if _, err := q.Offer(ctx, "dead"); err != nil {
			t.Fatal(err)
		}
		for attempt := 1; attempt <= 2; attempt++ {
			d := seedtest.ReceiveWithin(t, q, 10*time.Second)
			if d.Value != "dead" || d.Attempt != attempt {
				t.Fatalf("received %q attempt %d", d.Value, d.Attempt)
			}
			if err := d.Nack(ctx, 0); err != nil {
				t.Fatal(err)
			}
		}
		// One leased.
		if _, err := q.Offer(ctx, "inflight"); err != nil {
			t.Fatal(err)
		}
		held := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if held.Value != "inflight" {
			t.Fatalf("received %q", held.Value)
		}
		st = pzStats(t, q)
		if st.Dead != 1 || st.Inflight != 1 || st.Ready != 0 || st.Latency != 0 {
			t.Fatalf("Stats = %+v, want 1 dead, 1 in flight, nothing ready", st)
		}

		// Two ready while paused: the latency grows.
		offered := time.Now()
		if _, err := q.Offer(ctx, "r1"); err != nil {
			t.Fatal(err)
		}
		r1Returned := time.Now()
		if _, err := q.Offer(ctx, "r2"); err != nil {
			t.Fatal(err)
		}
		if err := admin.Pause(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		before := time.Now()
		st = pzStats(t, q)
		after := time.Now()
		want := blocking.Stats{Delayed: 2, Retry: 1, Ready: 2, Inflight: 1, Dead: 1, Paused: true, Latency: st.Latency, NextDue: st.NextDue,
			Failed: 3} // the retry's failed attempt and the dead letter's two
		if st != want {
			t.Fatalf("Stats while paused = %+v, want %+v", st, want)
		}
		// r1 fell due during its Offer call, and Stats read the server's
		// clock during its own call: stamped to the ms, so 1 ms of slack.
		if lo, hi := before.Sub(r1Returned)-time.Millisecond, after.Sub(offered)+time.Millisecond; st.Latency < lo || st.Latency > hi {
			t.Fatalf("Latency = %v, want within [%v, %v]", st.Latency, lo, hi)
		}
		if n, err := q.Purge(ctx); err != nil || n != 2 {
			t.Fatalf("Purge = %d, %v", n, err)
		}
		if st := pzStats(t, q); st.Latency != 0 || st.Ready != 0 || !st.Paused {
			t.Fatalf("Stats with nothing ready = %+v, want zero latency", st)
		}
		if err := admin.Resume(ctx); err != nil {
			t.Fatal(err)
		}
		if st := pzStats(t, q); st.Paused {
			t.Fatalf("Stats after Resume = %+v", st)
		}
		if err := held.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		// Nothing pending: no NextDue.
		for _, id := range []string{"d1h", "d2h"} {
			if ok, err := dq.Remove(ctx, id); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		if n, err := q.DeadLetters().Purge(ctx); err != nil || n != 1 {
			t.Fatal(n, err)
		}
		st = pzStats(t, q)
		if st.Delayed != 0 || st.Retry != 1 || st.Dead != 0 || st.Inflight != 0 {
			t.Fatalf("Stats = %+v", st)
		}
		if err := rdb.Del(ctx, redistest.KeysOf(name).Retry).Err(); err != nil {
			t.Fatal(err)
		}
		// Nothing held; the totals stay.
		if st := pzStats(t, q); st != (blocking.Stats{Processed: st.Processed, Failed: st.Failed}) || st.Processed != 1 || st.Failed != 3 {
			t.Fatalf("Stats of an emptied queue = %+v", st)
		}
	})
}

// Bad arguments return an error wrapping ErrInvalidArgument that names
// the problem, and change nothing.
func TestBlockingOperationsBadInput(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		for _, v := range []string{"a", "b"} {
			if _, err := q.Offer(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		k := redistest.KeysOf(name)
		ready := func() []string {
			l, err := rdb.LRange(ctx, k.Ready, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		before := ready()
		errOf := func(_ any, err error) error { return err }
		long := strings.Repeat("i", blocking.MaxIDLen+1)
		for what, r := range map[string]struct {
			err  error
			want string
		}{
			"Peek(0)":            {errOf(q.Peek(ctx, 0)), "count 0"},
			"Peek(-1)":           {errOf(q.Peek(ctx, -1)), "count -1"},
			"Peek(MaxPage+1)":    {errOf(q.Peek(ctx, blocking.MaxPage+1)), "count 1001"},
			"ReceiveBatch(0)":    {errOf(q.ReceiveBatch(ctx, 0)), "batch of 0"},
			"ReceiveBatch(257)":  {errOf(q.ReceiveBatch(ctx, 257)), "batch of 257"},
			"ReceiveBatch(-1)":   {errOf(q.ReceiveBatch(ctx, -1)), "batch of -1"},
			"TakeBatch(-1)":      {errOf(q.TakeBatch(ctx, -1)), "batch of -1"},
			"TakeBatch(0)":       {errOf(q.TakeBatch(ctx, 0)), "batch of 0"},
			"TakeBatch(257)":     {errOf(q.TakeBatch(ctx, 257)), "batch of 257"},
			"RedriveID(\"\")":    {q.RedriveID(ctx, ""), "empty id"},
			"RedriveID(257 b)":   {q.RedriveID(ctx, long), "257 bytes"},
			"Poll(-1ns) (again)": {errOf(func() (bool, error) { _, ok, err := q.Poll(ctx, -1); return ok, err }()), "negative timeout"},
		} {
			if !errors.Is(r.err, blocking.ErrInvalidArgument) {
				t.Errorf("%s = %v, want ErrInvalidArgument", what, r.err)
				continue
			}
			if !strings.Contains(r.err.Error(), r.want) {
				t.Errorf("%s = %q, want it to name the problem (%q)", what, r.err, r.want)
			}
		}
		if after := ready(); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Fatalf("refused calls changed the ready list: %q, was %q", after, before)
		}
		if st := pzStats(t, q); st.Ready != 2 || st.Inflight != 0 {
			t.Fatalf("Stats after refused calls = %+v", st)
		}
		if err := q.RedriveID(ctx, "nope"); !errors.Is(err, blocking.ErrNotFound) {
			t.Fatalf("RedriveID(nope) = %v, want ErrNotFound", err)
		}
		// The bounds themselves are allowed.
		if items, err := q.Peek(ctx, blocking.MaxPage); err != nil || len(items) != 2 {
			t.Fatalf("Peek(MaxPage) = %d, %v", len(items), err)
		}
		if ds, err := q.ReceiveBatch(ctx, 256); err != nil || len(ds) != 2 {
			t.Fatalf("ReceiveBatch(256) = %d, %v", len(ds), err)
		} else {
			for _, d := range ds {
				if err := d.Ack(ctx); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := q.Offer(ctx, "c"); err != nil {
			t.Fatal(err)
		}
		if vs, err := q.TakeBatch(ctx, 256); err != nil || len(vs) != 1 || vs[0] != "c" {
			t.Fatalf("TakeBatch(256) = %q, %v", vs, err)
		}
	})
}

// Pause stops Consume from starting handlers (only "handlers already
// running finish"): an item Consume leased ahead of its handlers before
// the Pause must not start once the queue is paused. Here one handler
// (concurrency 1) is busy for 2.5 s when the queue is paused, with one
// item leased ahead; nothing may start later than 1 s after the Pause.
func TestPauseStopsPrefetchedDeliveries(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	admin := blocking.New[string](redistest.NewClientLike(t, rdb), name)
	t.Cleanup(func() { _ = admin.Close() })
	for _, v := range []string{"a", "b", "c"} {
		if _, err := q.Offer(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	started := map[string]time.Time{}
	startedAt := func(v string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := started[v]
		return at, ok
	}
	cctx, cancel := context.WithCancel(ctx)
	done := pzGo(func() (string, error) {
		return "", q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			mu.Lock()
			started[d.Value] = time.Now()
			mu.Unlock()
			time.Sleep(2500 * time.Millisecond) // busy
			return nil
		})
	})
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("Consume did not return")
		}
	}()
	first := ""
	redistest.WaitFor(t, 10*time.Second, "one handler running, one item leased ahead", func() bool {
		mu.Lock()
		n := len(started)
		for v := range started {
			first = v
		}
		mu.Unlock()
		st := pzStats(t, admin)
		return n == 1 && st.Inflight == 2 && st.Ready == 1
	})
	if err := admin.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	time.Sleep(4 * time.Second)
	for _, v := range []string{"a", "b", "c"} {
		if at, ok := startedAt(v); ok && v != first && at.Sub(paused) > time.Second {
			t.Errorf("the handler for %s started %v after the Pause (the queue was paused; only %s was running)",
				v, at.Sub(paused).Round(time.Millisecond), first)
		}
	}
	st := pzStats(t, admin)
	t.Logf("Stats 4 s after the Pause: %+v", st)
	if err := admin.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 20*time.Second, "all three handled after Resume", func() bool {
		mu.Lock()
		n := len(started)
		mu.Unlock()
		st := pzStats(t, admin)
		return n == 3 && st.Inflight == 0 && st.Ready == 0
	})
}

// A pause or resume whose notification is lost (here: the flag written
// without one) reaches a consumer process within the transfer's sweep
// interval (1 s): its Take stops handing out items, then goes on.
// Receive sees the flag at once (its lease script reads it).
func TestPauseWithoutNotificationWithinSweep(t *testing.T) {
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	t.Cleanup(func() { _ = q.Close() })
	if _, ok, err := q.Poll(ctx, 0); err != nil || ok {
		t.Fatal(ok, err)
	}
	meta := redistest.KeysOf(name).Meta
	if err := rdb.HSet(ctx, meta, "paused", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Offer(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	// Receive: at once.
	rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if d, err := q.Receive(rctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive with the flag set = %+v, %v", d, err)
	}
	cancel()
	// Take and Poll: after the next transfer run at the latest.
	time.Sleep(2500 * time.Millisecond)
	if v, ok, err := q.Poll(ctx, 300*time.Millisecond); err != nil || ok {
		t.Fatalf("Poll %v after the flag was set = %q, %v, %v", 2500*time.Millisecond, v, ok, err)
	}
	take := pzGo(func() (string, error) { return q.Take(ctx) })
	time.Sleep(200 * time.Millisecond)
	if err := rdb.HDel(ctx, meta, "paused").Err(); err != nil {
		t.Fatal(err)
	}
	cleared := time.Now()
	select {
	case r := <-take:
		if r.err != nil || r.v != "x" {
			t.Fatalf("Take = %q, %v", r.v, r.err)
		}
		t.Logf("Take went on %v after the flag was cleared without a notification", r.at.Sub(cleared).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("Take still waiting 5 s after the flag was cleared")
	}
}

// Every new operation of a closed queue returns ErrClosed.
func TestOperationsAfterClose(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	dq := delayed.New(q)
	if _, err := dq.Offer(ctx, "x", time.Hour, delayed.WithID("x")); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	errOf := func(_ any, err error) error { return err }
	for what, err := range map[string]error{
		"Peek":         errOf(q.Peek(ctx, 1)),
		"ReceiveBatch": errOf(q.ReceiveBatch(ctx, 1)),
		"TakeBatch":    errOf(q.TakeBatch(ctx, 1)),
		"Purge":        errOf(q.Purge(ctx)),
		"Stats":        errOf(q.Stats(ctx)),
		"Pause":        q.Pause(ctx),
		"Resume":       q.Resume(ctx),
		"RedriveID":    q.RedriveID(ctx, "x"),
		"Get":          errOf(dq.Get(ctx, "x")),
		"Contains":     errOf(dq.Contains(ctx, "x")),
		"Reschedule":   dq.Reschedule(ctx, "x", time.Second),
		"RescheduleAt": dq.RescheduleAt(ctx, "x", time.Now().Add(time.Second)),
		"Promote":      dq.Promote(ctx, "x"),
		"Update":       dq.Update(ctx, "x", "y"),
		"List":         errOf(dq.List(ctx, 0, 1)),
	} {
		if !errors.Is(err, blocking.ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", what, err)
		}
	}
	_ = dq.Close()
	other := blocking.New[string](rdb, name)
	defer other.Close()
	if st := pzStats(t, other); st.Delayed != 1 || st.Paused {
		t.Fatalf("Stats = %+v: a refused call changed the queue", st)
	}
}

// A transfer run whose script read the pause flag before a Pause, and
// whose reply this process handled after the Pause, must not undo it:
// this process then took the queue for running and Take handed out its
// items until the next transfer run (TestPartitionPause failed so on a
// loaded machine). Here an item falls due every millisecond, so the
// transfer runs about once a millisecond and nearly every Pause meets a
// run in flight.
func TestPauseNotUndoneByTransferInFlight(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		dq := delayed.New(q)
		t.Cleanup(func() { _ = dq.Close() })
		const span, offerers = 4 * time.Second, 8
		start := time.Now()
		var wg sync.WaitGroup
		for w := range offerers {
			wg.Go(func() {
				for d := time.Duration(w) * time.Millisecond; d < span; d += offerers * time.Millisecond {
					if _, err := dq.OfferAt(ctx, "v", start.Add(time.Second+d)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		redistest.WaitFor(t, 10*time.Second, "the first items ready", func() bool {
			st, err := q.Stats(ctx)
			return err == nil && st.Ready > 0
		})
		rounds := 0
		for time.Since(start) < span {
			rounds++
			if err := q.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			for range 5 {
				if v, ok, err := q.Poll(ctx, 0); ok || err != nil {
					t.Fatalf("round %d: Poll on a paused queue = %q, %v, %v", rounds, v, ok, err)
				}
				time.Sleep(2 * time.Millisecond)
			}
			if err := q.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond)
		}
		t.Logf("%d rounds", rounds)
	})
}

// A Pause or Resume through a handle that never started its background
// work reaches, at once, a handle of the same queue and client that did:
// before, only the notification told it, a moment later, and a Take in
// between handed out an item of the paused queue.
func TestPauseThroughAnotherHandle(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		consumer := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = consumer.Close() })
		operator := blocking.New[string](rdb, name) // only offers and operates
		t.Cleanup(func() { _ = operator.Close() })
		const rounds = 10
		for range rounds + 1 {
			if _, err := operator.Offer(ctx, "v"); err != nil {
				t.Fatal(err)
			}
		}
		if _, ok, err := consumer.Poll(ctx, time.Second); !ok || err != nil { // starts its background work
			t.Fatalf("Poll = %v, %v", ok, err)
		}
		for i := range rounds {
			if err := operator.Pause(ctx); err != nil {
				t.Fatal(err)
			}
			if v, ok, err := consumer.Poll(ctx, 0); ok || err != nil {
				t.Fatalf("round %d: Poll right after another handle's Pause = %q, %v, %v", i, v, ok, err)
			}
			if err := operator.Resume(ctx); err != nil {
				t.Fatal(err)
			}
			if _, ok, err := consumer.Poll(ctx, 0); !ok || err != nil {
				t.Fatalf("round %d: Poll right after another handle's Resume = %v, %v", i, ok, err)
			}
		}
	})
}
