// Retry sends webhooks to receivers that sometimes fail. A failed delivery is
// retried with backoff, up to a number of attempts; a webhook that fails them
// all goes to the dead letters, where an operator reads why it failed.
//
// The receivers are fake and deterministic, so the outcome is known in
// advance, and the program checks it: it exits with status 1 if any webhook
// ends otherwise.
//
//	go run ./examples/retry                              # embedded miniredis
//	REDIS_ADDR=localhost:6379 go run ./examples/retry    # a Redis server
package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/examples/internal/exampleredis"
)

// Settings, short for the demo.
const (
	// maxAttempts is how many deliveries a webhook gets before it is
	// dead-lettered.
	maxAttempts = 4
	// visibility is how long a received webhook stays leased to its
	// consumer: if the consumer crashes, the webhook is delivered again after
	// this long. Consume extends the lease while the handler runs. Production:
	// the default, 30 s (leave out blocking.WithVisibilityTimeout).
	visibility = time.Second
	// postTimeout bounds one POST to a receiver; keep it well under the
	// visibility timeout. Production: 10 s or so.
	postTimeout = 250 * time.Millisecond
)

// retryDelay is the wait before retrying a webhook whose attempt failed:
// 100 ms, then 500 ms, then 1 s, the shape of "5 s, then 25 s, then 2 min"
// scaled down. Production: blocking.DefaultBackoff (1 s, 2 s, 4 s ... with
// jitter, capped at 10 minutes), or such a schedule in real time.
func retryDelay(attempt int) time.Duration {
	schedule := []time.Duration{100 * time.Millisecond, 500 * time.Millisecond, time.Second}
	return schedule[min(max(attempt, 1), len(schedule))-1]
}

// Webhook is the value queued: one event to POST to one receiver.
type Webhook struct {
	ID    string // receivers deduplicate by it: delivery is at least once
	URL   string
	Event string
	Run   string // which run of this demo offered it (see run)
}

// receiver is how a fake receiver behaves: its first `failures` calls fail
// (all of them when failures is never), with a 503 or by hanging until the
// caller times out; later calls succeed.
type receiver struct {
	failures int
	hangs    bool
}

const never = -1

var receivers = map[string]receiver{
	"https://ok.example.com/hooks":    {failures: 0},
	"https://flaky.example.com/hooks": {failures: 2},              // 503 twice, then fine
	"https://slow.example.com/hooks":  {failures: 3, hangs: true}, // times out 3 times, then fine
	"https://down.example.com/hooks":  {failures: never},          // 503 for good
}

var webhooks = []Webhook{
	{ID: "wh-1", URL: "https://ok.example.com/hooks", Event: "order.created"},
	{ID: "wh-2", URL: "https://flaky.example.com/hooks", Event: "order.created"},
	{ID: "wh-3", URL: "https://ok.example.com/hooks", Event: "order.paid"},
	{ID: "wh-4", URL: "https://down.example.com/hooks", Event: "order.paid"},
	{ID: "wh-5", URL: "https://slow.example.com/hooks", Event: "order.shipped"},
	{ID: "wh-6", URL: "https://ok.example.com/hooks", Event: "order.shipped"},
	{ID: "wh-7", URL: "https://flaky.example.com/hooks", Event: "invoice.issued"},
	{ID: "wh-8", URL: "https://ok.example.com/hooks", Event: "invoice.issued"},
}

// expect returns what should become of w: delivered after n attempts, or
// dead-lettered (n == 0).
func expect(w Webhook) (attempts int) {
	f := receivers[w.URL].failures
	if f == never || f >= maxAttempts {
		return 0
	}
	return f + 1
}

// endpoint stands in for the receivers' HTTP servers.
type endpoint struct {
	mu    sync.Mutex
	calls map[string]int // webhook ID -> calls so far
}

// post delivers w as an HTTP client would, failing as w's receiver dictates.
func (e *endpoint) post(ctx context.Context, w Webhook) error {
	e.mu.Lock()
	e.calls[w.ID]++
	call := e.calls[w.ID]
	e.mu.Unlock()

	r := receivers[w.URL]
	if r.failures == never || call <= r.failures {
		if r.hangs {
			<-ctx.Done() // no answer: the client gives up at its timeout
			return fmt.Errorf("POST %s: %w", w.URL, ctx.Err())
		}
		time.Sleep(20 * time.Millisecond)
		return fmt.Errorf("POST %s: %d %s", w.URL, http.StatusServiceUnavailable, http.StatusText(http.StatusServiceUnavailable))
	}
	time.Sleep(20 * time.Millisecond) // network and receiver time
	return nil
}

// outcomes collects what became of each webhook.
type outcomes struct {
	mu        sync.Mutex
	delivered map[string]int    // webhook ID -> attempts it took
	dead      map[string]string // webhook ID -> its last error
	repeats   []string          // webhooks that got a second outcome
	all       chan struct{}     // closed when every webhook has an outcome
}

func newOutcomes() *outcomes {
	return &outcomes{delivered: map[string]int{}, dead: map[string]string{}, all: make(chan struct{})}
}

func (o *outcomes) record(id string, delivered bool, attempts int, lastErr string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.delivered[id]; ok {
		o.repeats = append(o.repeats, id)
		return
	}
	if _, ok := o.dead[id]; ok {
		o.repeats = append(o.repeats, id)
		return
	}
	if delivered {
		o.delivered[id] = attempts
	} else {
		o.dead[id] = lastErr
	}
	if len(o.delivered)+len(o.dead) == len(webhooks) {
		close(o.all)
	}
}

var start = time.Now()

// logf prints a line stamped with the time since the program started.
func logf(format string, args ...any) {
	fmt.Printf("[%5.2fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "retry:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	rdb, cleanup, err := exampleredis.Connect()
	if err != nil {
		return err
	}
	defer cleanup()

	q := blocking.New[Webhook](rdb, "webhooks",
		blocking.WithMaxAttempts(maxAttempts),
		blocking.WithVisibilityTimeout(visibility))
	defer q.Close() // closes q.DeadLetters() too

	// On a shared server, an interrupted earlier run may have left webhooks
	// in the queue; they carry another run ID and are dropped when received.
	runID := fmt.Sprintf("%x", time.Now().UnixNano())

	for _, w := range webhooks {
		w.Run = runID
		if _, err := q.Offer(ctx, w); err != nil {
			return err
		}
		logf("%s offered: %s to %s", w.ID, w.Event, host(w.URL))
	}

	ep := &endpoint{calls: map[string]int{}}
	got := newOutcomes()

	// The sender: Consume runs send on each webhook, four at a time. A nil
	// result acks the webhook; an error retries it after retryDelay, or
	// dead-letters it after maxAttempts.
	send := func(ctx context.Context, d *blocking.Delivery[Webhook]) error {
		w := d.Value
		if w.Run != runID {
			logf("%s dropped: left over from an earlier run", w.ID)
			return nil
		}
		if d.Attempt > 1 {
			logf("%s attempt %d of %d; last error: %s", w.ID, d.Attempt, maxAttempts, d.Headers[blocking.HeaderError])
		}
		postCtx, cancel := context.WithTimeout(ctx, postTimeout)
		defer cancel()
		if err := ep.post(postCtx, w); err != nil {
			if d.Attempt < maxAttempts {
				logf("%s attempt %d failed: %v; retry in %v", w.ID, d.Attempt, err, retryDelay(d.Attempt))
			} else {
				logf("%s attempt %d failed: %v; giving up", w.ID, d.Attempt, err)
			}
			return err // recorded in the next delivery's Headers[blocking.HeaderError]
		}
		logf("%s delivered on attempt %d", w.ID, d.Attempt)
		got.record(w.ID, true, d.Attempt, "")
		return nil
	}

	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	var workers sync.WaitGroup
	var sendErr, deadErr error
	workers.Go(func() {
		sendErr = q.Consume(sendCtx, send,
			blocking.WithConcurrency(4),
			blocking.WithBackoff(retryDelay))
	})
	// The operator's side: read the dead letters as they come.
	workers.Go(func() { deadErr = readDeadLetters(sendCtx, q.DeadLetters(), runID, got) })

	// Stop once every webhook is delivered or dead-lettered. Consume lets
	// the handlers in hand finish and settles them before it returns.
	timeout := time.NewTimer(15 * time.Second)
	defer timeout.Stop()
	var waitErr error
	select {
	case <-got.all:
	case <-timeout.C:
		waitErr = errors.New("timed out waiting for every webhook to be delivered or dead-lettered")
	case <-ctx.Done():
		waitErr = ctx.Err()
	}
	stopSending()
	workers.Wait()
	if !errors.Is(sendErr, context.Canceled) {
		return fmt.Errorf("sender stopped: %w", sendErr)
	}
	if err := errors.Join(waitErr, deadErr); err != nil {
		return err
	}

	return summarize(ctx, q, got)
}

// readDeadLetters receives the webhooks that failed for good, until ctx
// ends. A real operator (or tool) would look into each, then drop it, or fix
// the receiver and move the dead letters back with q.Redrive.
func readDeadLetters(ctx context.Context, dead *blocking.Queue[Webhook], runID string, got *outcomes) error {
	for {
		d, err := dead.Receive(ctx)
		if errors.Is(err, context.Canceled) {
			return nil
		}
		if err != nil {
			return err
		}
		w := d.Value
		if w.Run == runID {
			logf("%s dead-lettered: %s", w.ID, d.Headers[blocking.HeaderError])
			got.record(w.ID, false, 0, d.Headers[blocking.HeaderError])
		} else {
			logf("%s dropped from the dead letters: left over from an earlier run", w.ID)
		}
		if err := d.Ack(ctx); err != nil { // done with it: gone for good
			return err
		}
	}
}

// summarize prints what became of each webhook and checks it against what
// the receivers dictate.
func summarize(ctx context.Context, q *blocking.Queue[Webhook], got *outcomes) error {
	got.mu.Lock()
	defer got.mu.Unlock()

	var delivered, dead, wrong []string
	for _, w := range webhooks {
		line := fmt.Sprintf("  %s  %-14s to %-18s", w.ID, w.Event, host(w.URL))
		attempts, isDelivered := got.delivered[w.ID]
		lastErr, isDead := got.dead[w.ID]
		switch {
		case isDelivered:
			delivered = append(delivered, fmt.Sprintf("%s after %d attempt%s", line, attempts, plural(attempts)))
		case isDead:
			dead = append(dead, fmt.Sprintf("%s last error: %s", line, lastErr))
		}

		switch want := expect(w); {
		case want > 0 && attempts != want:
			wrong = append(wrong, fmt.Sprintf("%s: want delivered after %d attempts; delivered after %d, dead-lettered %v", w.ID, want, attempts, isDead))
		case want == 0 && (!isDead || isDelivered):
			wrong = append(wrong, fmt.Sprintf("%s: want dead-lettered; dead-lettered %v, delivered %v", w.ID, isDead, isDelivered))
		case want == 0 && !strings.Contains(lastErr, "503 Service Unavailable"):
			wrong = append(wrong, fmt.Sprintf("%s: dead-lettered with last error %q, want the receiver's 503", w.ID, lastErr))
		}
	}
	for _, id := range got.repeats {
		wrong = append(wrong, fmt.Sprintf("%s: handled again after its outcome", id))
	}
	ready, err := q.Size(ctx)
	if err != nil {
		return err
	}
	deadLeft, err := q.DeadLetters().Size(ctx)
	if err != nil {
		return err
	}
	if ready+deadLeft != 0 {
		wrong = append(wrong, fmt.Sprintf("left in Redis: %d ready, %d dead letters; want none", ready, deadLeft))
	}

	fmt.Println()
	fmt.Println("delivered:")
	fmt.Println(strings.Join(delivered, "\n"))
	fmt.Println("dead-lettered:")
	fmt.Println(strings.Join(dead, "\n"))
	if len(wrong) > 0 {
		slices.Sort(wrong)
		return fmt.Errorf("unexpected outcome:\n  %s", strings.Join(wrong, "\n  "))
	}
	fmt.Println("ok: every webhook was delivered or dead-lettered as its receiver dictates")
	return nil
}

func host(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	return u.Host
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
