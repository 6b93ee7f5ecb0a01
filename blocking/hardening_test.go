package blocking_test

// Tests of the defects fixed before v1 (each failed on the code before its
// fix; docs/hardening.md lists what each showed before and after).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
	"github.com/redelay/redelay/internal/store"
)

// infoField reads one field of INFO section from a server.
func infoField(t *testing.T, rdb redis.UniversalClient, section, field string) string {
	t.Helper()
	info, err := rdb.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return ""
}

func infoInt(t *testing.T, rdb redis.UniversalClient, section, field string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(infoField(t, rdb, section, field), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// commandCalls is how many times a server ran cmd (INFO commandstats).
func commandCalls(t *testing.T, rdb redis.UniversalClient, cmd string) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
			return n
		}
	}
	return 0
}

// pushRaw puts bytes on a queue's ready list, as another writer would.
func pushRaw(t *testing.T, rdb redis.UniversalClient, name string, raw []byte) {
	t.Helper()
	if err := rdb.LPush(context.Background(), redistest.KeysOf(name).Ready, raw).Err(); err != nil {
		t.Fatal(err)
	}
}

// rawEnvelope returns an envelope holding v encoded with msgpack.
func rawEnvelope(t *testing.T, e envelope.Envelope, v any) []byte {
	t.Helper()
	p, err := codec.Msgpack().Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	e.Payload = p
	return e.Marshal()
}

// retries returns the envelopes in a queue's retry set, due first.
func retries(t *testing.T, rdb redis.UniversalClient, name string) []envelope.Envelope {
	t.Helper()
	members, err := rdb.ZRange(context.Background(), redistest.KeysOf(name).Retry, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []envelope.Envelope
	for _, m := range members {
		raw := []byte(m)[1+int(m[0]):] // length byte, nonce, envelope
		e, err := envelope.UnmarshalUpTo(raw, envelope.MaxVersion)
		if err != nil {
			// A version this test knows to be newer: read what every
			// version shares.
			e = envelope.Envelope{Attempt: envelope.Attempt(raw)}
			e.ID, _ = envelope.PeekID(raw)
			out = append(out, e)
			continue
		}
		out = append(out, e)
	}
	return out
}

// Close wakes every blocked call: Take, Poll, Receive and an idle Consume
// return ErrClosed within half a second of Close (before: they stayed
// blocked until their own ctx ended).
func TestCloseUnblocksWaiters(t *testing.T) {
	t.Parallel()
	rdb := redistest.StartServer(t).Client(t)
	q := blocking.New[string](rdb, redistest.QueueName(t))
	ctx := context.Background()
	type result struct {
		call string
		err  error
		at   time.Time
	}
	results := make(chan result, 4)
	run := func(call string, f func() error) {
		go func() {
			err := f()
			results <- result{call, err, time.Now()}
		}()
	}
	run("Take", func() error { _, err := q.Take(ctx); return err })
	run("Poll", func() error { _, _, err := q.Poll(ctx, 10*time.Second); return err })
	run("Receive", func() error { _, err := q.Receive(ctx); return err })
	run("Consume", func() error {
		return q.Consume(ctx, func(context.Context, *blocking.Delivery[string]) error { return nil })
	})
	// Take, Poll, Receive and Consume's two receivers wait in BLMOVE.
	redistest.WaitFor(t, 10*time.Second, "five blocked waits", func() bool { return infoInt(t, rdb, "clients", "blocked_clients") >= 5 })

	closed := time.Now()
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	closeTook := time.Since(closed)
	for range 4 {
		select {
		case r := <-results:
			if !errors.Is(r.err, blocking.ErrClosed) {
				t.Errorf("%s returned %v, want ErrClosed", r.call, r.err)
			}
			if took := r.at.Sub(closed); took > 500*time.Millisecond {
				t.Errorf("%s returned %v after Close, want within 500ms", r.call, took)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiting call did not return within 5s of Close")
		}
	}
	if closeTook > 1500*time.Millisecond {
		t.Errorf("Close took %v", closeTook)
	}
}

// Close returns promptly while Redis is down, with a consumer waiting and
// a transfer registered (before: it waited for the in-flight calls and
// go-redis's retries).
func TestCloseDuringOutageIsPrompt(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	rdb := srv.Client(t)
	q := blocking.New[string](rdb, redistest.QueueName(t))
	errc := make(chan error, 1)
	go func() {
		_, err := q.Take(context.Background())
		errc <- err
	}()
	redistest.WaitFor(t, 10*time.Second, "a blocked Take", func() bool { return infoInt(t, rdb, "clients", "blocked_clients") >= 1 })
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = q.Close()
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Close took %v with Redis down", took)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, blocking.ErrClosed) && err == nil {
			t.Fatalf("Take = %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Take still blocked 1s after Close")
	}
}

// A queue opened and dropped without Close leaves nothing behind: no
// goroutine, and the heap flat after 100k New (before: ~3 KB per New, held
// by the depth gauge's callback in the otel global meter).
func TestNewWithoutCloseDoesNotLeak(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	name := redistest.QueueName(t)
	// The client's connections (and the embedded server's goroutine for
	// each) are opened first: a first offer announces the queue, in a
	// pipeline of its own.
	warm := blocking.New[string](rdb, name+"-warm")
	for range 2 {
		if _, err := warm.Offer(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
	}
	goroutines := runtime.NumGoroutine()
	q := blocking.New[string](rdb, name)
	if _, err := q.Offer(context.Background(), "x"); err != nil {
		t.Fatal(err)
	}
	redistest.WaitFor(t, 2*time.Second, "no goroutine left by New and Offer", func() bool { return runtime.NumGoroutine() <= goroutines })

	const n = 100_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		_ = blocking.New[string](rdb, name)
	}
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&after)
	perNew := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
	t.Logf("heap %d -> %d bytes: %.1f bytes per New", before.HeapAlloc, after.HeapAlloc, perNew)
	if perNew >= 50 {
		t.Fatalf("%.0f bytes per New kept on the heap after GC, want < 50", perNew)
	}
}

// A handler that settles its delivery itself (here Nack for an hour) is
// left alone: no second settlement, no false "lease lost" warning, and the
// retry is pending (before: Consume acked again and logged the warning).
func TestHandlerSettlesItsOwnDelivery(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	logger, logs := redistest.CaptureLogs()
	q := blocking.New[string](rdb, name, blocking.WithLogger(logger))
	defer q.Close()
	if _, err := q.Offer(context.Background(), "job"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	nacked := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(ctx context.Context, d *blocking.Delivery[string]) error {
			nacked <- d.Nack(ctx, time.Hour)
			return nil
		})
	}()
	if err := <-nacked; err != nil {
		t.Fatalf("the handler's Nack: %v", err)
	}
	cancel()
	<-done
	if rs := retries(t, rdb, name); len(rs) != 1 || rs[0].Attempt != 1 {
		t.Fatalf("retries = %+v, want the one nacked item, attempt 1", rs)
	}
	if n := keyLen(t, rdb, name, "inflight"); n != 0 {
		t.Fatalf("%d leases left", n)
	}
	if strings.Contains(logs.String(), "lease lost") || strings.Contains(logs.String(), "could not settle") {
		t.Fatalf("false warning: %s", logs)
	}
}

// SkipRetry dead-letters at once; RetryAfter retries after exactly the
// given delay instead of the backoff.
func TestSkipRetryAndRetryAfter(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	t.Run("SkipRetry", func(t *testing.T) {
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(10))
		defer q.Close()
		if _, err := q.Offer(ctx, "bad input"); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var calls atomic.Int64
		go func() {
			_ = q.Consume(cctx, func(context.Context, *blocking.Delivery[string]) error {
				calls.Add(1)
				return blocking.SkipRetry(errors.New("malformed order"))
			})
		}()
		d := seedtest.ReceiveWithin(t, q.DeadLetters(), 5*time.Second)
		if calls.Load() != 1 || d.Headers[blocking.HeaderError] != "malformed order" {
			t.Fatalf("handler called %d times, dead letter error %q", calls.Load(), d.Headers[blocking.HeaderError])
		}
		_ = d.Ack(ctx)
	})
	t.Run("RetryAfter", func(t *testing.T) {
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		if _, err := q.Offer(ctx, "later"); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type call struct {
			attempt int
			at      time.Time
		}
		calls := make(chan call, 2)
		go func() {
			_ = q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
				calls <- call{d.Attempt, time.Now()}
				if d.Attempt == 1 {
					return blocking.RetryAfter(400*time.Millisecond, errors.New("rate limited"))
				}
				return nil
			}, blocking.WithBackoff(func(int) time.Duration { return time.Hour }))
		}()
		first, second := <-calls, <-calls
		gap := second.at.Sub(first.at)
		if second.attempt != 2 || gap < 400*time.Millisecond || gap > 3*time.Second {
			t.Fatalf("retried as attempt %d after %v, want attempt 2 after 400ms (not the 1h backoff)", second.attempt, gap)
		}
	})
}

// Shutdown is bounded: WithShutdownTimeout cancels running handlers'
// contexts once it passes, and their items go back to the queue at once,
// with no attempt counted (before: Consume waited for handlers forever,
// and a handler's ctx was never cancelled).
func TestShutdownTimeoutCancelsHandlers(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	for _, obeys := range []bool{true, false} {
		t.Run(fmt.Sprintf("handler obeys ctx %v", obeys), func(t *testing.T) {
			name := redistest.QueueName(t)
			q := blocking.New[string](rdb, name) // visibility 30 s: a release is not an expiry
			defer q.Close()
			if _, err := q.Offer(ctx, "long job"); err != nil {
				t.Fatal(err)
			}
			started := make(chan struct{})
			unblock := make(chan struct{})
			defer close(unblock)
			cctx, cancel := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- q.Consume(cctx, func(hctx context.Context, _ *blocking.Delivery[string]) error {
					close(started)
					if obeys {
						<-hctx.Done()
						return hctx.Err()
					}
					<-unblock
					return nil
				}, blocking.WithShutdownTimeout(200*time.Millisecond))
			}()
			<-started
			cancel()
			start := time.Now()
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Consume = %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Consume still running 5s after its ctx ended")
			}
			took := time.Since(start)
			limit := 1500 * time.Millisecond // 200 ms, then at most 1 s for a handler that ignores its ctx
			if took < 200*time.Millisecond || took > limit {
				t.Fatalf("Consume returned %v after cancel, want 200ms to %v", took, limit)
			}
			// Back at once: a receiver's wait abandoned at shutdown may
			// catch it as it comes back, and gives it back in turn.
			redistest.WaitFor(t, time.Second, "the item back in the ready list", func() bool {
				return keyLen(t, rdb, name, "ready") == 1 && keyLen(t, rdb, name, "inflight") == 0
			})
			d := seedtest.ReceiveWithin(t, q, 2*time.Second)
			if d.Attempt != 1 {
				t.Fatalf("redelivered as attempt %d, want 1: an interrupted handler is no failed attempt", d.Attempt)
			}
			_ = d.Ack(ctx)
		})
	}
}

// WithHandlerTimeout gives each call a deadline; a handler that returns its
// ctx's error is retried like any failure.
func TestHandlerTimeout(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t))
	defer q.Close()
	if _, err := q.Offer(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type call struct {
		attempt int
		left    time.Duration
		err     error
	}
	calls := make(chan call, 2)
	go func() {
		_ = q.Consume(cctx, func(hctx context.Context, d *blocking.Delivery[string]) error {
			dl, ok := hctx.Deadline()
			if !ok {
				calls <- call{attempt: d.Attempt, left: -1}
				return nil
			}
			left := time.Until(dl)
			if d.Attempt == 1 {
				<-hctx.Done()
				calls <- call{d.Attempt, left, hctx.Err()}
				return hctx.Err()
			}
			calls <- call{d.Attempt, left, nil}
			return nil
		}, blocking.WithHandlerTimeout(100*time.Millisecond), blocking.WithBackoff(func(int) time.Duration { return 0 }))
	}()
	first, second := <-calls, <-calls
	if first.left <= 0 || first.left > 100*time.Millisecond || !errors.Is(first.err, context.DeadlineExceeded) {
		t.Fatalf("first call: deadline in %v, ended with %v", first.left, first.err)
	}
	if second.attempt != 2 {
		t.Fatalf("retried as attempt %d", second.attempt)
	}
}

// An envelope of a version this consumer does not know (a newer producer
// during a rolling upgrade) is a failed attempt, retried with backoff, the
// reason in its error header: not dead-lettered at once (before: it was).
func TestUnknownEnvelopeVersionIsRetried(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[string](rdb, name)
	defer q.Close()
	raw := rawEnvelope(t, envelope.Envelope{ID: "from-the-future"}, "hello")
	raw[0] = envelope.Version + 1
	pushRaw(t, rdb, name, raw)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if d, err := q.Receive(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive = %+v, %v; want nothing it can read", d, err)
	}
	if n := keyLen(t, rdb, name, "dead:ready"); n != 0 {
		t.Fatalf("dead-lettered at once")
	}
	rs := retries(t, rdb, name)
	if len(rs) != 1 || rs[0].ID != "from-the-future" || rs[0].Attempt != 1 {
		t.Fatalf("retries = %+v, want the item, one failed attempt counted", rs)
	}
	member := mustZMember(t, rdb, redistest.KeysOf(name).Retry)
	if !strings.Contains(member, "unknown version") {
		t.Fatalf("the retry does not say why: %q", member)
	}
}

// A value this consumer's type cannot decode (a deploy that changed T) is
// retried like any failure, not dead-lettered at once (before: it was).
func TestUndecodableValueIsRetried(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	q := blocking.New[int](rdb, name)
	defer q.Close()
	pushRaw(t, rdb, name, rawEnvelope(t, envelope.Envelope{ID: "a-string"}, "not an int"))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := q.Receive(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive = %v", err)
	}
	if n := keyLen(t, rdb, name, "dead:ready"); n != 0 {
		t.Fatalf("dead-lettered at once")
	}
	if rs := retries(t, rdb, name); len(rs) != 1 || rs[0].Attempt != 1 || !strings.Contains(rs[0].Headers[blocking.HeaderError], "decode") {
		t.Fatalf("retries = %+v", rs)
	}
}

// A rolling upgrade with two envelope versions: a newer producer writes
// version 2 (with an extension field) beside version 1. A consumer that
// reads only version 1 handles the version-1 items, and gives the others
// back as failed attempts with the reason; they wait for a consumer that
// reads version 2, which gets them with the extension intact. Left to old
// consumers only, they end in the dead letters after the max attempts,
// never at once.
func TestRollingUpgradeTwoEnvelopeVersions(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	fast := blocking.WithBackoff(func(int) time.Duration { return 10 * time.Millisecond })

	name := redistest.QueueName(t)
	v2 := rawEnvelope(t, envelope.Envelope{ID: "v2", Ext: map[uint64][]byte{42: []byte("a future field")}}, "two")
	pushRaw(t, rdb, name, v2)
	producer := blocking.New[string](rdb, name)
	if _, err := producer.Offer(ctx, "one", blocking.WithID("v1")); err != nil { // this release writes version 1
		t.Fatal(err)
	}

	old := blocking.New[string](rdb, name, blocking.WithMaxEnvelopeVersion(1))
	defer old.Close()
	cctx, cancel := context.WithCancel(ctx)
	var handled sync.Map
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = old.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			handled.Store(d.ID, d.Value)
			return nil
		}, blocking.WithBackoff(func(int) time.Duration { return time.Hour }))
	}()
	redistest.WaitFor(t, 5*time.Second, "the old consumer handles v1 and gives v2 back", func() bool {
		_, ok := handled.Load("v1")
		return ok && keyLen(t, rdb, name, "retry") == 1
	})
	cancel()
	<-done
	if _, ok := handled.Load("v2"); ok {
		t.Fatal("the old consumer handled a version it cannot read")
	}
	rs := retries(t, rdb, name)
	if len(rs) != 1 || rs[0].ID != "v2" || rs[0].Attempt != 1 || string(rs[0].Ext[42]) != "a future field" ||
		!strings.Contains(rs[0].Headers[blocking.HeaderError], "version 2") {
		t.Fatalf("the v2 item as given back: %+v", rs)
	}
	// Make the retry due now; the new consumer reads it.
	k := redistest.KeysOf(name)
	if err := rdb.ZAdd(ctx, k.Retry, redis.Z{Score: 0, Member: mustZMember(t, rdb, k.Retry)}).Err(); err != nil {
		t.Fatal(err)
	}
	upgraded := blocking.New[string](rdb, name)
	defer upgraded.Close()
	d := seedtest.ReceiveWithin(t, upgraded, 5*time.Second)
	if d.ID != "v2" || d.Value != "two" || d.Attempt != 2 {
		t.Fatalf("the new consumer got %q = %q, attempt %d", d.ID, d.Value, d.Attempt)
	}
	_ = d.Ack(ctx)

	// With old consumers only, a v2 item is dead-lettered after the
	// attempts, with the reason.
	name2 := redistest.QueueName(t)
	pushRaw(t, rdb, name2, v2)
	old2 := blocking.New[string](rdb, name2, blocking.WithMaxEnvelopeVersion(1), blocking.WithMaxAttempts(3))
	defer old2.Close()
	cctx, cancel = context.WithCancel(ctx)
	defer cancel()
	go func() {
		_ = old2.Consume(cctx, func(context.Context, *blocking.Delivery[string]) error { return nil }, fast)
	}()
	k2 := redistest.KeysOf(name2)
	redistest.WaitFor(t, 10*time.Second, "dead-lettered after 3 attempts", func() bool { return rdb.LLen(ctx, k2.DeadReady).Val() == 1 })
	raw, err := rdb.LIndex(ctx, k2.DeadReady, 0).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	e, err := envelope.Unmarshal(raw)
	if err != nil || e.ID != "v2" || string(e.Ext[42]) != "a future field" ||
		!strings.HasSuffix(e.Headers[blocking.HeaderError], "(attempt 3 of 3)") {
		t.Fatalf("dead letter %+v, %v", e, err)
	}
}

// Waiting receivers cost Redis no writes, and one ready item wakes one of
// them (before: every waiter woke with a write, BLMOVE ready ready, and ran
// the receive script; with appendfsync always, an fsync per waiter per
// item).
func TestWaitingReceiversCostNoWrites(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, redistest.WithArgs("--appendonly", "yes", "--appendfsync", "no"))
	rdb := srv.Client(t)
	// The receive script's calls by this process (the waiters'; the
	// producer below has a client of its own).
	receives := redistest.CountScript(rdb, lua.Receive)
	name := redistest.QueueName(t)
	// A long sweep and no timers: the queue's transfer stays quiet.
	q := blocking.New[string](rdb, name, blocking.WithSweepInterval(time.Hour))
	defer q.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const waiters = 8
	got := make(chan string, waiters)
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			d, err := q.Receive(ctx)
			if err == nil {
				got <- d.Value
			}
		})
	}
	defer wg.Wait()
	defer cancel()
	redistest.WaitFor(t, 10*time.Second, "all waiting", func() bool { return infoInt(t, rdb, "clients", "blocked_clients") >= waiters })
	// The transfer's first run ends with the queue's entry in the registry
	// of queues, its one write: the AOF's baseline is read after it,
	// however long a loaded machine makes it take. (The transfer runs
	// again when its subscription is confirmed, which writes nothing: the
	// script calls counted below are the receive script's only.)
	redistest.WaitFor(t, 10*time.Second, "the transfer's first run", func() bool {
		return rdb.ZScore(context.Background(), keys.Registry, name).Err() == nil
	})
	aof := infoInt(t, rdb, "persistence", "aof_current_size")
	before := receives.Load()
	// Each waiter blocks at most half a second at a time: this spans
	// several rounds of waiting.
	time.Sleep(1200 * time.Millisecond)
	if after := infoInt(t, rdb, "persistence", "aof_current_size"); after != aof {
		t.Fatalf("waiting wrote %d bytes to the AOF", after-aof)
	}
	producer := blocking.New[string](redistest.NewClientLike(t, rdb), name)
	if _, err := producer.Offer(context.Background(), "one item"); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != "one item" {
			t.Fatalf("got %q", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("nobody received the item")
	}
	time.Sleep(300 * time.Millisecond)
	if len(got) != 0 {
		t.Fatalf("%d more receivers returned", len(got))
	}
	// One lease: no other waiter ran the receive script.
	if n := receives.Load() - before; n != 1 {
		t.Fatalf("%d receive script calls for one delivery, want 1", n)
	}
}

// Consume extends the leases of all its running handlers in one round trip
// per tick (before: one call per lease per tick).
func TestLeaseExtensionsBatched(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(redistest.Standalone(t).Options())
	t.Cleanup(func() { _ = rdb.Close() })
	counter := redistest.CountScript(rdb, lua.Extend)
	name := redistest.QueueName(t)
	const vis = 300 * time.Millisecond // a tick every 100 ms
	q := blocking.New[int](rdb, name, blocking.WithVisibilityTimeout(vis))
	defer q.Close()
	const n = 8
	for i := range n {
		if _, err := q.Offer(context.Background(), i); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var running atomic.Int64
	release := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = q.Consume(ctx, func(context.Context, *blocking.Delivery[int]) error {
			running.Add(1)
			<-release
			return nil
		}, blocking.WithConcurrency(n))
	}()
	redistest.WaitFor(t, 5*time.Second, "all handlers running", func() bool { return running.Load() == n })
	before := counter.Load()
	time.Sleep(time.Second)
	calls := counter.Load() - before
	close(release)
	cancel()
	<-done
	// About ten ticks in a second; one call per lease would be eighty.
	if calls < 3 || calls > 20 {
		t.Fatalf("%d extend calls in 1s for %d leases, want one per tick (about 10)", calls, n)
	}
	if n := keyLen(t, rdb, name, "inflight"); n != 0 {
		t.Fatalf("%d leases left after the handlers finished", n)
	}
}

// The max attempts are the queue's: the process that set them last
// records them in Redis, and every process dead-letters at that attempt,
// whether the lease expires or the delivery is nacked (before: the
// reclaimer used the first registration's setting in the process, Nack
// the caller's).
func TestMaxAttemptsIsTheQueues(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	first := blocking.New[string](rdb, name, blocking.WithMaxAttempts(10), blocking.WithVisibilityTimeout(50*time.Millisecond))
	defer first.Close()
	if _, _, err := first.Poll(ctx, time.Millisecond); err != nil { // starts its work; records 10
		t.Fatal(err)
	}
	second := blocking.New[string](redistest.NewClientLike(t, rdb), name, blocking.WithMaxAttempts(1))
	defer second.Close()
	if _, _, err := second.Poll(ctx, time.Millisecond); err != nil { // records 1
		t.Fatal(err)
	}
	if v, _ := rdb.HGet(ctx, redistest.KeysOf(name).Meta, "max_attempts").Result(); v != "1" {
		t.Fatalf("recorded max attempts %q, want 1", v)
	}
	// Received through the handle configured with 10, never settled: the
	// lease expires on the queue's last attempt.
	if _, err := first.Offer(ctx, "expires"); err != nil {
		t.Fatal(err)
	}
	d := seedtest.ReceiveWithin(t, first, 2*time.Second)
	dd := seedtest.ReceiveWithin(t, first.DeadLetters(), 5*time.Second)
	if dd.ID != d.ID || dd.Headers[blocking.HeaderError] != "lease expired on attempt 1 of 1" {
		t.Fatalf("dead letter %q: %q", dd.ID, dd.Headers[blocking.HeaderError])
	}
	_ = dd.Ack(ctx)
	// Nacked through the same handle: dead-lettered too.
	if _, err := first.Offer(ctx, "nacked"); err != nil {
		t.Fatal(err)
	}
	d = seedtest.ReceiveWithin(t, first, 2*time.Second)
	if err := d.Nack(ctx, 0, blocking.WithReason(errors.New("boom"))); err != nil {
		t.Fatal(err)
	}
	dd = seedtest.ReceiveWithin(t, first.DeadLetters(), 2*time.Second)
	if dd.ID != d.ID || dd.Headers[blocking.HeaderError] != "boom (attempt 1 of 1)" {
		t.Fatalf("dead letter %q: %q", dd.ID, dd.Headers[blocking.HeaderError])
	}
}

// A backoff function that returns a negative delay retries at once instead
// of failing the nack (before: the nack failed, and the item waited for its
// lease to expire).
func TestNegativeBackoffIsClamped(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	logger, logs := redistest.CaptureLogs()
	q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithLogger(logger))
	defer q.Close()
	if _, err := q.Offer(context.Background(), "job"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	attempts := make(chan time.Time, 2)
	go func() {
		_ = q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			attempts <- time.Now()
			if d.Attempt == 1 {
				return errors.New("first attempt fails")
			}
			return nil
		}, blocking.WithBackoff(func(int) time.Duration { return -time.Second }))
	}()
	first := <-attempts
	select {
	case second := <-attempts:
		if gap := second.Sub(first); gap > 2*time.Second {
			t.Fatalf("retried %v later, want at once (the visibility timeout is 30s)", gap)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not retried within 5s")
	}
	if strings.Contains(logs.String(), "negative") {
		t.Fatalf("logged: %s", logs)
	}
}

// The receivers' backoff after Redis errors has jitter, so consumers do
// not retry in step (before: 900 ms every time for the third failure).
func TestReceiveBackoffHasJitter(t *testing.T) {
	seen := map[time.Duration]bool{}
	for range 20 {
		d := blocking.BackoffOnError(3)
		if d <= 0 || d > 5*time.Second {
			t.Fatalf("backoff %v", d)
		}
		seen[d] = true
	}
	if len(seen) < 5 {
		t.Fatalf("20 backoffs took %d values", len(seen))
	}
}

// At shutdown, items leased ahead that no handler started go back to the
// queue at once, whatever the running handlers do (before: their leases
// kept being extended while a handler hung).
func TestShutdownReleasesUnstartedAtOnce(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	name := redistest.QueueName(t)
	// A visibility timeout that a loaded machine's lease extensions keep
	// up with: the hanging handler's lease must not expire meanwhile.
	q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(time.Second))
	defer q.Close()
	for _, v := range []string{"first", "second", "third"} {
		if _, err := q.Offer(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
	release := make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	started := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var first sync.Once
		done <- q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			// The first item handled hangs, whichever it is: the two
			// receives run concurrently, so "first" may not be handled
			// first (and, handled after another, would find nothing left
			// to lease ahead but the third).
			hang := false
			first.Do(func() { hang = true })
			if hang {
				close(started)
				<-release
			}
			return nil
		}, blocking.WithConcurrency(1), blocking.WithShutdownTimeout(-1))
	}()
	// On failure too: the handler returns and Consume with it.
	defer func() { unblock(); cancel(); <-done }()
	<-started
	// One handler: one item handled, one leased ahead (twice the
	// concurrency in all), one ready.
	redistest.WaitFor(t, 5*time.Second, "an item leased ahead", func() bool { return keyLen(t, rdb, name, "inflight") == 2 })
	cancel()
	// Before the fix the item never came back while the handler hung (its
	// lease kept being extended); the bound only leaves room for a loaded
	// machine.
	redistest.WaitFor(t, 3*time.Second, "the unstarted item back", func() bool { return keyLen(t, rdb, name, "ready") == 2 })
	if n := keyLen(t, rdb, name, "inflight"); n != 1 {
		t.Fatalf("%d leases held while the first handler hangs, want its one", n)
	}
	unblock()
	err := <-done
	done <- err // for the deferred wait
	if n := keyLen(t, rdb, name, "inflight"); n != 0 {
		t.Fatalf("%d leases left", n)
	}
}

// A foreign write that gives one of a queue's keys the wrong type makes
// calls fail with the error and change nothing (before: the receive script
// popped the item, then failed at the lease, and the item was lost), and
// Consume backs off instead of spinning.
func TestWrongTypeKeyChangesNothing(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	for _, key := range []string{"leases", "inflight", "dead:ready"} {
		t.Run("receive with "+key, func(t *testing.T) {
			name := redistest.QueueName(t)
			q := blocking.New[string](rdb, name)
			defer q.Close()
			if _, err := q.Offer(ctx, "precious"); err != nil {
				t.Fatal(err)
			}
			k := fmt.Sprintf("redelay:{%s}:%s", name, key)
			if err := rdb.Set(ctx, k, "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			if d, err := q.Receive(rctx); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Fatalf("Receive = %+v, %v; want the WRONGTYPE error", d, err)
			}
			if ready, _ := rdb.LRange(ctx, redistest.KeysOf(name).Ready, 0, -1).Result(); len(ready) != 1 {
				t.Fatalf("ready list after the failed Receive: %q, want the item", ready)
			}
			_ = rdb.Del(ctx, k)
			d := seedtest.ReceiveWithin(t, q, 2*time.Second)
			if d.Value != "precious" {
				t.Fatalf("got %q", d.Value)
			}
		})
	}
	t.Run("nack with retry", func(t *testing.T) {
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		if _, err := q.Offer(ctx, "precious"); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 2*time.Second)
		k := redistest.KeysOf(name)
		if err := rdb.Set(ctx, k.Retry, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, time.Hour); err == nil || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Fatalf("Nack = %v", err)
		}
		if n := keyLen(t, rdb, name, "inflight"); n != 1 {
			t.Fatalf("the lease is gone after the failed Nack")
		}
		_ = rdb.Del(ctx, k.Retry)
	})
	t.Run("offer with items", func(t *testing.T) {
		name := redistest.QueueName(t)
		q := blocking.New[string](rdb, name)
		k := redistest.KeysOf(name)
		if err := rdb.Set(ctx, k.Items, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		// A delayed offer reads the items hash first; an immediate one
		// writes only the ready list and works.
		if _, err := q.Offer(ctx, "now"); err != nil {
			t.Fatal(err)
		}
		if n, _ := rdb.Exists(ctx, k.Seq, k.Delayed).Result(); n != 0 {
			t.Fatal("offer wrote delayed keys")
		}
	})
	t.Run("Consume backs off", func(t *testing.T) {
		name := redistest.QueueName(t)
		logger, logs := redistest.CaptureLogs()
		q := blocking.New[string](rdb, name, blocking.WithLogger(logger))
		defer q.Close()
		if _, err := q.Offer(ctx, "precious"); err != nil {
			t.Fatal(err)
		}
		k := redistest.KeysOf(name)
		if err := rdb.Set(ctx, k.Leases, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_ = q.Consume(cctx, func(context.Context, *blocking.Delivery[string]) error { return nil })
		failures := strings.Count(logs.String(), "receive failed")
		if failures == 0 || failures > 30 {
			t.Fatalf("%d failed receives logged in 2s, want a few (backing off)", failures)
		}
		if n := keyLen(t, rdb, name, "ready"); n != 1 {
			t.Fatalf("ready = %d, want the item untouched", n)
		}
	})
}

// WithMaxPayloadSize(-1) means no limit, as documented (before: it made
// the queue invalid).
func TestMaxPayloadSizeMinusOne(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxPayloadSize(-1))
	defer q.Close()
	for _, v := range []string{"small", strings.Repeat("x", 2<<20)} {
		if _, err := q.Offer(context.Background(), v); err != nil {
			t.Fatalf("Offer of %d bytes: %v", len(v), err)
		}
	}
	limited := blocking.New[string](rdb, redistest.QueueName(t))
	if _, err := limited.Offer(context.Background(), strings.Repeat("x", 2<<20)); !errors.Is(err, blocking.ErrPayloadTooLarge) {
		t.Fatalf("2 MiB with the default limit: %v", err)
	}
}

// Producer headers reach the consumer; reserved names and bad headers are
// refused with ErrInvalidArgument.
func TestHeaders(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t))
	defer q.Close()
	id, err := q.Offer(ctx, "v", blocking.WithID("pay-1"), blocking.WithHeaders(map[string]string{"tenant": "acme", "content-language": "fr"}))
	if err != nil || id != "pay-1" {
		t.Fatalf("Offer = %q, %v", id, err)
	}
	d := seedtest.ReceiveWithin(t, q, 2*time.Second)
	if d.ID != "pay-1" || d.Headers["tenant"] != "acme" || d.Headers["content-language"] != "fr" {
		t.Fatalf("delivery %q, headers %v", d.ID, d.Headers)
	}
	_ = d.Ack(ctx)
	many := map[string]string{}
	for i := range 65 {
		many[strconv.Itoa(i)] = "v"
	}
	for name, h := range map[string]map[string]string{
		"reserved":   {"redelay-error": "forged"},
		"reserved 2": {"Redelay-Anything": "x"},
		"empty name": {"": "x"},
		"too many":   many,
		"long name":  {strings.Repeat("k", 257): "v"},
	} {
		if _, err := q.Offer(ctx, "v", blocking.WithHeaders(h)); !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Errorf("%s: Offer = %v, want ErrInvalidArgument", name, err)
		}
	}
	if n, _ := q.Size(ctx); n != 0 {
		t.Fatalf("refused offers stored %d items", n)
	}
}

// Every bad argument is an error wrapping ErrInvalidArgument that names it.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	q := blocking.New[string](rdb, redistest.QueueName(t))
	defer q.Close()
	if _, err := q.Offer(ctx, "v"); err != nil {
		t.Fatal(err)
	}
	d := seedtest.ReceiveWithin(t, q, 2*time.Second)
	h := func(context.Context, *blocking.Delivery[string]) error { return nil }
	_, pollErr := func() (bool, error) { _, ok, err := q.Poll(ctx, -time.Second); return ok, err }()
	_, emptyID := q.Offer(ctx, "v", blocking.WithID(""))
	_, longID := q.Offer(ctx, "v", blocking.WithID(strings.Repeat("i", 257)))
	for name, err := range map[string]error{
		"Poll(-1s)":               pollErr,
		"WithID(\"\")":            emptyID,
		"WithID(257 bytes)":       longID,
		"Nack(-1s)":               d.Nack(ctx, -time.Second),
		"Nack(290 years)":         d.Nack(ctx, 290*365*24*time.Hour),
		"Extend(0)":               d.Extend(ctx, 0),
		"Extend(2 years)":         d.Extend(ctx, 2*365*24*time.Hour),
		"WithConcurrency(0)":      q.Consume(ctx, h, blocking.WithConcurrency(0)),
		"WithShutdownTimeout(-2)": q.Consume(ctx, h, blocking.WithShutdownTimeout(-2)),
		"WithHandlerTimeout(0)":   q.Consume(ctx, h, blocking.WithHandlerTimeout(0)),
	} {
		if !errors.Is(err, blocking.ErrInvalidArgument) {
			t.Errorf("%s = %v, want ErrInvalidArgument", name, err)
		}
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatalf("the delivery after refused calls: %v", err)
	}
}

// expireLease receives v from a fresh handle of the queue and drops the
// delivery, as a consumer that dies would; it returns the lease's deadline
// (Unix ms) once the handle is closed, so no reclaimer of it runs.
func expireLease(t *testing.T, rdb *redis.Client, name, v string, opts ...blocking.OfferOption) float64 {
	t.Helper()
	ctx := context.Background()
	q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(200*time.Millisecond))
	defer q.Close()
	if _, err := q.Offer(ctx, v, opts...); err != nil {
		t.Fatal(err)
	}
	seedtest.ReceiveWithin(t, q, 2*time.Second) // never settled
	ls, err := rdb.ZRangeWithScores(ctx, redistest.KeysOf(name).Leases, 0, -1).Result()
	if err != nil || len(ls) != 1 {
		t.Fatalf("leases %v, %v", ls, err)
	}
	return ls[0].Score
}

// waitServerPast waits until the server's clock is past ms (Unix ms).
func waitServerPast(t *testing.T, rdb *redis.Client, ms float64) {
	t.Helper()
	redistest.WaitFor(t, 2*time.Second, "the server's clock past the leases", func() bool {
		now, err := rdb.Time(context.Background()).Result()
		return err == nil && float64(now.UnixMilli()) > ms
	})
}

// An expired lease whose in-flight entry is no envelope (a foreign write)
// is dead-lettered as it is, and the leases reclaimed with it come back
// (before: the reclaim script failed on it after deleting the in-flight
// entries of its batch, and the item whose lease expired with it was lost).
func TestReclaimDeadLettersNonEnvelope(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	k := redistest.KeysOf(name)
	deadline := expireLease(t, rdb, name, "precious")
	// Bytes that are no envelope under a lease that expires just after the
	// item's, in the same batch.
	if err := rdb.HSet(ctx, k.Inflight, "garbage", "xx").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZAdd(ctx, k.Leases, redis.Z{Score: deadline + 1, Member: "garbage"}).Err(); err != nil {
		t.Fatal(err)
	}
	waitServerPast(t, rdb, deadline+1)
	logger, logs := redistest.CaptureLogs()
	q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(time.Second), blocking.WithLogger(logger))
	defer q.Close()
	d := seedtest.ReceiveWithin(t, q, 5*time.Second)
	if d.Value != "precious" || d.Attempt != 2 {
		t.Fatalf("got %q attempt %d, want precious attempt 2", d.Value, d.Attempt)
	}
	if err := d.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	// The log says what was dead-lettered: an entry with no readable ID,
	// not an item of ID "" out of attempts. The reclaimer writes it after
	// its call returns, which can be after the delivery above.
	redistest.WaitFor(t, 5*time.Second, "the reclaimer's log of the entry with no readable ID", func() bool {
		return strings.Contains(logs.String(), "no readable ID")
	})
	if l := logs.String(); strings.Contains(l, "ids=[]") {
		t.Errorf("logs tell the entry that is no envelope as an item of no ID:\n%s", l)
	}
	if n, _ := q.DeadLetters().Size(ctx); n != 1 {
		t.Fatalf("dead letters = %d, want 1 (the bytes that are no envelope)", n)
	}
	if raw, _ := rdb.LIndex(ctx, k.DeadReady, 0).Result(); raw != "xx" {
		t.Fatalf("dead letter = %q, want the bytes as they were", raw)
	}
	if n, _ := rdb.HLen(ctx, k.Inflight).Result(); n != 0 {
		t.Fatalf("in-flight entries left: %d", n)
	}
}

// A max_attempts in the meta hash that is no number (a foreign write) counts
// as absent: an expired lease comes back, and a nack retries (before: the
// reclaim script failed after deleting the in-flight entry, and the item
// was lost; the nack failed).
func TestBadMaxAttemptsInMeta(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	t.Run("reclaim", func(t *testing.T) {
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		if err := rdb.HSet(ctx, k.Meta, "max_attempts", "ten").Err(); err != nil {
			t.Fatal(err)
		}
		waitServerPast(t, rdb, expireLease(t, rdb, name, "precious"))
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(time.Second))
		defer q.Close()
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if d.Value != "precious" || d.Attempt != 2 {
			t.Fatalf("got %q attempt %d, want precious attempt 2", d.Value, d.Attempt)
		}
		_ = d.Ack(ctx)
	})
	t.Run("nack", func(t *testing.T) {
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		q := blocking.New[string](rdb, name)
		defer q.Close()
		if _, err := q.Offer(ctx, "precious"); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 2*time.Second)
		if err := rdb.HSet(ctx, k.Meta, "max_attempts", "ten").Err(); err != nil {
			t.Fatal(err)
		}
		if err := d.Nack(ctx, 0); err != nil {
			t.Fatalf("Nack: %v", err)
		}
		d = seedtest.ReceiveWithin(t, q, 2*time.Second)
		if d.Value != "precious" || d.Attempt != 2 {
			t.Fatalf("got %q attempt %d, want precious attempt 2", d.Value, d.Attempt)
		}
		_ = d.Ack(ctx)
	})
}

// A max_attempts in the meta hash that Lua's tonumber reads but that is
// not a positive integer in decimal digits, as processes write it (a
// foreign write), counts as none, like one that is no number: the
// process's own limit applies (before: "nan" and "inf" made every attempt
// less than the limit, so an item never dead-lettered; "0x10" read as 16,
// "1.5" as 1.5, "1e1" as 10).
func TestNonIntegerMaxAttemptsInMeta(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	for _, v := range []string{"nan", "inf", "0x10", "1.5", " 5", "1e1", "0", "-3"} {
		t.Run("reclaim "+v, func(t *testing.T) {
			name := redistest.QueueName(t)
			k := redistest.KeysOf(name)
			ms := expireLease(t, rdb, name, "precious")
			if err := rdb.HSet(ctx, k.Meta, "max_attempts", v).Err(); err != nil {
				t.Fatal(err)
			}
			waitServerPast(t, rdb, ms)
			if _, err := store.New(rdb).Partition(k).Reclaim(ctx, 500, 1); err != nil {
				t.Fatal(err)
			}
			if n := rdb.LLen(ctx, k.DeadReady).Val(); n != 1 {
				t.Fatalf("max_attempts %q: %d dead letters after an expired lease on attempt 1 of 1, want 1", v, n)
			}
		})
		t.Run("nack "+v, func(t *testing.T) {
			name := redistest.QueueName(t)
			k := redistest.KeysOf(name)
			q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
			defer q.Close()
			if _, err := q.Offer(ctx, "precious"); err != nil {
				t.Fatal(err)
			}
			d := seedtest.ReceiveWithin(t, q, 2*time.Second)
			if err := rdb.HSet(ctx, k.Meta, "max_attempts", v).Err(); err != nil {
				t.Fatal(err)
			}
			if err := d.Nack(ctx, 0); err != nil {
				t.Fatal(err)
			}
			if n := rdb.LLen(ctx, k.DeadReady).Val(); n != 1 {
				t.Fatalf("max_attempts %q: %d dead letters after a Nack of attempt 1 of 1, want 1", v, n)
			}
		})
	}
}

// A sequence counter that INCRBY refuses (a foreign write) makes the
// scripts that give an item of priority back fail before their first
// write (before: reclaim, nack, release and redrive deleted the item, then
// failed at the push to the priority set, and the item was lost).
func TestBadSeqLosesNothing(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	prio := blocking.WithPriority(5)
	corrupt := func(t *testing.T, k keys.Set) {
		t.Helper()
		if err := rdb.Set(ctx, k.Seq, "x", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// holds checks that the item is where the failed call found it, and
	// that it comes back once the counter is repaired.
	holds := func(t *testing.T, name, key string, attempt int) {
		t.Helper()
		k := redistest.KeysOf(name)
		var n int64
		switch key {
		case "inflight":
			n, _ = rdb.HLen(ctx, k.Inflight).Result()
		case "dead":
			n, _ = rdb.LLen(ctx, k.DeadReady).Result()
		}
		if n != 1 {
			t.Fatalf("%s holds %d items after the failed call, want the item", key, n)
		}
		if err := rdb.Del(ctx, k.Seq).Err(); err != nil {
			t.Fatal(err)
		}
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(200*time.Millisecond))
		defer q.Close()
		if key == "dead" {
			if _, err := q.Redrive(ctx, 10); err != nil {
				t.Fatal(err)
			}
		}
		d := seedtest.ReceiveWithin(t, q, 5*time.Second)
		if d.Value != "precious" || d.Priority != 5 || d.Attempt != attempt {
			t.Fatalf("got %q priority %d attempt %d", d.Value, d.Priority, d.Attempt)
		}
		_ = d.Ack(ctx)
	}
	t.Run("reclaim", func(t *testing.T) {
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		waitServerPast(t, rdb, expireLease(t, rdb, name, "precious", prio))
		corrupt(t, k)
		if _, err := store.New(rdb).Partition(k).Reclaim(ctx, 500, 10); err == nil {
			t.Fatal("Reclaim with a bad counter: no error")
		}
		holds(t, name, "inflight", 2)
	})
	t.Run("nack", func(t *testing.T) {
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(200*time.Millisecond))
		if _, err := q.Offer(ctx, "precious", prio); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 2*time.Second)
		corrupt(t, k)
		if err := d.Nack(ctx, 0); err == nil {
			t.Fatal("Nack with a bad counter: no error")
		}
		_ = q.Close()
		holds(t, name, "inflight", 2)
	})
	t.Run("release", func(t *testing.T) {
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(200*time.Millisecond))
		if _, err := q.Offer(ctx, "precious", prio); err != nil {
			t.Fatal(err)
		}
		seedtest.ReceiveWithin(t, q, 2*time.Second)
		_ = q.Close()
		corrupt(t, k)
		tokens, err := rdb.HKeys(ctx, k.Inflight).Result()
		if err != nil || len(tokens) != 1 {
			t.Fatalf("in-flight tokens %v, %v", tokens, err)
		}
		if _, err := store.New(rdb).Partition(k).Release(ctx, tokens); err == nil {
			t.Fatal("Release with a bad counter: no error")
		}
		holds(t, name, "inflight", 2)
	})
	t.Run("redrive", func(t *testing.T) {
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(1))
		defer q.Close()
		if _, err := q.Offer(ctx, "precious", prio); err != nil {
			t.Fatal(err)
		}
		d := seedtest.ReceiveWithin(t, q, 2*time.Second)
		if err := d.Nack(ctx, 0); err != nil { // its last attempt: dead-lettered
			t.Fatal(err)
		}
		corrupt(t, k)
		if _, err := q.Redrive(ctx, 10); err == nil {
			t.Fatal("Redrive with a bad counter: no error")
		}
		holds(t, name, "dead", 1)
	})
}

// cyclicNode can lead back to itself.
type cyclicNode struct {
	Name string
	Next *cyclicNode
}

// Offer of a cyclic value returns an error wrapping
// codec.ErrUnsupportedValue and stores nothing, with either codec (before:
// with msgpack, the default, the encode recursed until the stack
// overflowed and the process died; see TestMsgpackCycle in codec).
func TestOfferCyclicValue(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	for _, c := range []codec.Codec{codec.Msgpack(), codec.JSON()} {
		nodes := blocking.New[*cyclicNode](rdb, redistest.QueueName(t), blocking.WithCodec(c))
		defer nodes.Close()
		n := &cyclicNode{Name: "a"}
		n.Next = n
		if id, err := nodes.Offer(ctx, n); !errors.Is(err, codec.ErrUnsupportedValue) || id != "" {
			t.Errorf("%s: Offer(node pointing to itself) = %q, %v; want ErrUnsupportedValue", c.Name(), id, err)
		}
		maps := blocking.New[map[string]any](rdb, redistest.QueueName(t), blocking.WithCodec(c))
		defer maps.Close()
		m := map[string]any{"k": "v"}
		m["self"] = []any{m}
		if _, err := maps.Offer(ctx, m, blocking.WithID("m-1")); !errors.Is(err, codec.ErrUnsupportedValue) {
			t.Errorf("%s: Offer(map holding itself) = %v; want ErrUnsupportedValue", c.Name(), err)
		} else if !strings.Contains(err.Error(), "cycle") {
			t.Errorf("%s: %v does not name the cycle", c.Name(), err)
		}
		for _, q := range []interface {
			Size(context.Context) (int64, error)
		}{nodes, maps} {
			if size, err := q.Size(ctx); err != nil || size != 0 {
				t.Errorf("%s: refused offers stored %d items (%v)", c.Name(), size, err)
			}
		}
		n.Next = nil // the same value without the cycle is fine
		if _, err := nodes.Offer(ctx, n); err != nil {
			t.Errorf("%s: Offer(node) = %v", c.Name(), err)
		}
	}
}

// Items given back after an earlier call took them out of Redis (a Take
// whose caller left before the reply came: giveback.lua) exist only in
// the client; with an order counter that is no integer, or no string,
// they still go back, first in line by priority (before: the call
// failed at the counter and the items were lost; an item of priority 0
// given back with them went back alone).
func TestGiveBackWithBadSeqLosesNothing(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	for what, corrupt := range map[string]func(k keys.Set) error{
		"no integer": func(k keys.Set) error { return rdb.Set(ctx, k.Seq, "x", 0).Err() },
		"wrong type": func(k keys.Set) error {
			if err := rdb.Del(ctx, k.Seq).Err(); err != nil {
				return err
			}
			return rdb.HSet(ctx, k.Seq, "f", "v").Err()
		},
	} {
		t.Run(what, func(t *testing.T) {
			name := redistest.QueueName(t)
			k := redistest.KeysOf(name)
			q := blocking.New[string](rdb, name)
			defer q.Close()
			for _, o := range []struct {
				v string
				p int
			}{{"a", 5}, {"b", 5}, {"c", 0}, {"d", 0}} {
				if _, err := q.Offer(ctx, o.v, blocking.WithPriority(o.p)); err != nil {
					t.Fatal(err)
				}
			}
			// Take a (the first of priority 5) and c (the first of
			// priority 0) out of Redis, as a pop does.
			popped, err := rdb.ZPopMin(ctx, k.Prio, 1).Result()
			if err != nil || len(popped) != 1 {
				t.Fatalf("ZPOPMIN = %v, %v", popped, err)
			}
			a := []byte(popped[0].Member.(string)[lua.SeqLen:])
			c, err := rdb.RPop(ctx, k.Ready).Bytes()
			if err == nil && len(c) == 1 { // the priority marker
				c, err = rdb.RPop(ctx, k.Ready).Bytes()
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := corrupt(k); err != nil {
				t.Fatal(err)
			}
			if err := store.New(rdb).Partition(k).PushBack(ctx, a, c); err != nil {
				t.Errorf("PushBack with a bad counter: %v", err)
			}
			var got []string
			for {
				rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
				d, err := q.Receive(rctx)
				cancel()
				if err != nil {
					break
				}
				got = append(got, d.Value)
				_ = d.Ack(ctx)
			}
			if strings.Join(got, "") != "abcd" {
				t.Fatalf("received %q, want a b c d: given back first in line, by priority", got)
			}
		})
	}
}

// errLog keeps the "err" attribute of every record logged, as an error
// value.
type errLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *errLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *errLog) WithGroup(string) slog.Handler            { return l }
func (l *errLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" {
			l.mu.Lock()
			l.errs = append(l.errs, err)
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// The error logged for a ready item that cannot be read, which Peek
// leaves out, matches the public sentinels: ErrCorrupt for bytes that are
// no envelope, a malformed envelope and a newer version, ErrDecode for a
// value the codec refuses (before: only sentinels of an internal package,
// or none).
func TestCorruptItemErrorIsErrCorrupt(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	payload, err := codec.Msgpack().Marshal("x")
	if err != nil {
		t.Fatal(err)
	}
	good := (&envelope.Envelope{ID: "x", Payload: payload}).Marshal()
	for _, c := range []struct {
		what string
		raw  []byte
		want error
		text string
	}{
		{"no envelope", []byte("garbage that is not an envelope"), blocking.ErrCorrupt, "not an envelope"},
		{"malformed", append(append([]byte{}, good[:envelope.HeaderLen]...), 0x7f, 'b'), blocking.ErrCorrupt, "corrupt"},
		{"newer", append([]byte{9}, good[1:]...), blocking.ErrCorrupt, "unknown version"},
		{"value", good, blocking.ErrDecode, "decode with msgpack codec"},
	} {
		t.Run(c.what, func(t *testing.T) {
			name := redistest.QueueName(t)
			logs := &errLog{}
			q := blocking.New[int](rdb, name, blocking.WithLogger(slog.New(logs)))
			defer q.Close()
			if err := rdb.LPush(ctx, redistest.KeysOf(name).Ready, c.raw).Err(); err != nil {
				t.Fatal(err)
			}
			if items, err := q.Peek(ctx, 10); err != nil || len(items) != 0 {
				t.Fatalf("Peek = %v, %v; want the item left out", items, err)
			}
			logs.mu.Lock()
			defer logs.mu.Unlock()
			if len(logs.errs) != 1 {
				t.Fatalf("logged errors %v, want one", logs.errs)
			}
			err := logs.errs[0]
			other := blocking.ErrDecode
			if c.want == blocking.ErrDecode {
				other = blocking.ErrCorrupt
			}
			if !errors.Is(err, c.want) || errors.Is(err, other) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("logged %v; want %v saying %q", err, c.want, c.text)
			}
		})
	}
}
