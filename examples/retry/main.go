// Retry sends webhooks to receivers that sometimes fail. A failed delivery is
// retried with backoff, up to a number of attempts; a webhook that fails them
// all goes to the dead letters, where an operator reads why it failed. A
// receiver's answer can change that: a 4xx such as 410 Gone is permanent, so
// the webhook goes to the dead letters at once (blocking.SkipRetry), and a
// 429 or 503 with a Retry-After header is retried when the receiver asked
// (blocking.RetryAfter).
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

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
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
	// sendTimeout bounds one attempt (blocking.WithHandlerTimeout): a
	// receiver that has not answered by then has failed. Production: 10 s or
	// so.
	sendTimeout = 250 * time.Millisecond
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
}

// receiver is how a fake receiver behaves: its first `failures` calls fail
// (all of them when failures is never) with the status given, or by hanging
// until the caller times out when status is 0; later calls succeed. A
// failure with a Retry-After also fails the calls that come before that
// time, as a rate limiter would.
type receiver struct {
	failures   int
	status     int
	retryAfter time.Duration
}

const never = -1

var receivers = map[string]receiver{
	"https://ok.example.com/hooks": {failures: 0},
	// 503 twice, then fine.
	"https://flaky.example.com/hooks": {failures: 2, status: http.StatusServiceUnavailable},
	// No answer 3 times, then fine.
	"https://slow.example.com/hooks": {failures: 3},
	// 503 for good.
	"https://down.example.com/hooks": {failures: never, status: http.StatusServiceUnavailable},
	// 410 Gone: the receiver removed its endpoint.
	"https://gone.example.com/hooks": {failures: never, status: http.StatusGone},
	// 429 Too Many Requests with Retry-After: 1 (second), then fine if the
	// sender waits that long.
	"https://busy.example.com/hooks": {failures: 1, status: http.StatusTooManyRequests, retryAfter: time.Second},
}

var webhooks = []Webhook{
	{ID: "wh-1", URL: "https://ok.example.com/hooks", Event: "order.created"},
	{ID: "wh-2", URL: "https://flaky.example.com/hooks", Event: "order.created"},
	{ID: "wh-3", URL: "https://ok.example.com/hooks", Event: "order.paid"},
	{ID: "wh-4", URL: "https://down.example.com/hooks", Event: "order.paid"},
	{ID: "wh-5", URL: "https://slow.example.com/hooks", Event: "order.shipped"},
	{ID: "wh-6", URL: "https://gone.example.com/hooks", Event: "order.shipped"},
	{ID: "wh-7", URL: "https://busy.example.com/hooks", Event: "invoice.issued"},
	{ID: "wh-8", URL: "https://ok.example.com/hooks", Event: "invoice.issued"},
}

// expect returns what should become of w: delivered after n attempts, or
// dead-lettered after n attempts with a last error that mentions status.
func expect(w Webhook) (delivered bool, attempts int, status string) {
	r := receivers[w.URL]
	statusText := fmt.Sprintf("%d %s", r.status, http.StatusText(r.status))
	switch {
	case permanent(r.status) && r.failures != 0:
		return false, 1, statusText
	case r.failures == never || r.failures >= maxAttempts:
		return false, maxAttempts, statusText
	}
	return true, r.failures + 1, ""
}

// httpError is a receiver's error answer.
type httpError struct {
	url        string
	status     int
	retryAfter time.Duration // from its Retry-After header; 0 when none
}

func (e *httpError) Error() string {
	return fmt.Sprintf("POST %s: %d %s", e.url, e.status, http.StatusText(e.status))
}

// permanent reports whether an answer with this status means that sending
// the same request again is useless: a 4xx, except 408 Request Timeout and
// 429 Too Many Requests.
func permanent(status int) bool {
	return status >= 400 && status < 500 &&
		status != http.StatusRequestTimeout && status != http.StatusTooManyRequests
}

// endpoint stands in for the receivers' HTTP servers.
type endpoint struct {
	mu        sync.Mutex
	calls     map[string]int       // webhook ID -> calls so far
	notBefore map[string]time.Time // webhook ID -> the Retry-After it was given
}

// post delivers w as an HTTP client would, failing as w's receiver dictates.
// Its error is an *httpError when the receiver answered.
func (e *endpoint) post(ctx context.Context, w Webhook) error {
	r := receivers[w.URL]
	e.mu.Lock()
	e.calls[w.ID]++
	call := e.calls[w.ID]
	early := time.Now().Before(e.notBefore[w.ID])
	fails := early || r.failures == never || call <= r.failures
	if fails && r.retryAfter > 0 {
		e.notBefore[w.ID] = time.Now().Add(r.retryAfter)
	}
	e.mu.Unlock()

	if fails && r.status == 0 {
		<-ctx.Done() // no answer: the client gives up at its timeout
		return fmt.Errorf("POST %s: %w", w.URL, ctx.Err())
	}
	time.Sleep(20 * time.Millisecond) // network and receiver time
	if fails {
		return &httpError{url: w.URL, status: r.status, retryAfter: r.retryAfter}
	}
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

	rdb, cleanup, err := connect()
	if err != nil {
		return err
	}
	defer cleanup()

	q := blocking.New[Webhook](rdb, "webhooks",
		blocking.WithMaxAttempts(maxAttempts),
		blocking.WithVisibilityTimeout(visibility))
	defer q.Close() // closes q.DeadLetters() too

	// On a shared server, an interrupted earlier run may have left webhooks
	// in the queue. Each item carries the ID of the run that offered it in a
	// header, so that leftovers are dropped when received.
	runID := fmt.Sprintf("%x", time.Now().UnixNano())
	runHeader := map[string]string{"demo-run": runID}

	for _, w := range webhooks {
		// The webhook's ID is the item's too (Delivery.ID, and the id in
		// redelay's log lines).
		if _, err := q.Offer(ctx, w, blocking.WithID(w.ID), blocking.WithHeaders(runHeader)); err != nil {
			return err
		}
		logf("%s offered: %s to %s", w.ID, w.Event, host(w.URL))
	}

	ep := &endpoint{calls: map[string]int{}, notBefore: map[string]time.Time{}}
	got := newOutcomes()

	// The sender: Consume runs send on each webhook, four at a time, each
	// call with sendTimeout to finish. A nil result acks the webhook; an
	// error retries it after retryDelay, or dead-letters it after
	// maxAttempts. SkipRetry dead-letters it at once; RetryAfter chooses the
	// delay.
	send := func(ctx context.Context, d *blocking.Delivery[Webhook]) error {
		w := d.Value
		if d.Headers["demo-run"] != runID {
			logf("%s dropped: left over from an earlier run", w.ID)
			return nil
		}
		if d.Attempt > 1 {
			logf("%s attempt %d of %d; last error: %s", w.ID, d.Attempt, maxAttempts, d.Headers[blocking.HeaderError])
		}
		err := ep.post(ctx, w)
		if err == nil {
			logf("%s delivered on attempt %d", w.ID, d.Attempt)
			got.record(w.ID, true, d.Attempt, "")
			return nil
		}
		// Errors are recorded in the next delivery's (or the dead letter's)
		// Headers[blocking.HeaderError].
		var answer *httpError
		isAnswer := errors.As(err, &answer)
		switch {
		case isAnswer && permanent(answer.status):
			logf("%s attempt %d failed: %v; permanent, not retried", w.ID, d.Attempt, err)
			return blocking.SkipRetry(err)
		case d.Attempt >= maxAttempts:
			logf("%s attempt %d failed: %v; giving up", w.ID, d.Attempt, err)
			return err
		case isAnswer && answer.retryAfter > 0:
			logf("%s attempt %d failed: %v; retry in %v, as its Retry-After says", w.ID, d.Attempt, err, answer.retryAfter)
			return blocking.RetryAfter(answer.retryAfter, err)
		default:
			logf("%s attempt %d failed: %v; retry in %v", w.ID, d.Attempt, err, retryDelay(d.Attempt))
			return err
		}
	}

	sendCtx, stopSending := context.WithCancel(ctx)
	defer stopSending()
	var workers sync.WaitGroup
	var sendErr, deadErr error
	workers.Go(func() {
		sendErr = q.Consume(sendCtx, send,
			blocking.WithConcurrency(4),
			blocking.WithHandlerTimeout(sendTimeout),
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

	return summarize(ctx, q, got, ep)
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
		if d.Headers["demo-run"] == runID {
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
func summarize(ctx context.Context, q *blocking.Queue[Webhook], got *outcomes, ep *endpoint) error {
	got.mu.Lock()
	defer got.mu.Unlock()
	ep.mu.Lock()
	defer ep.mu.Unlock()

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

		calls := ep.calls[w.ID]
		switch wantDelivered, wantAttempts, wantStatus := expect(w); {
		case wantDelivered && attempts != wantAttempts:
			wrong = append(wrong, fmt.Sprintf("%s: want delivered after %d attempts; delivered after %d, dead-lettered %v", w.ID, wantAttempts, attempts, isDead))
		case !wantDelivered && (!isDead || isDelivered):
			wrong = append(wrong, fmt.Sprintf("%s: want dead-lettered; dead-lettered %v, delivered %v", w.ID, isDead, isDelivered))
		case !wantDelivered && !strings.Contains(lastErr, wantStatus):
			wrong = append(wrong, fmt.Sprintf("%s: dead-lettered with last error %q, want the receiver's %s", w.ID, lastErr, wantStatus))
		case !wantDelivered && calls != wantAttempts:
			wrong = append(wrong, fmt.Sprintf("%s: dead-lettered after %d attempts, want %d", w.ID, calls, wantAttempts))
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

// connect returns a client to the Redis server at $REDIS_ADDR (host:port),
// after checking that it answers. With REDIS_ADDR unset it starts an
// embedded miniredis on a loopback port instead, so that the example runs on
// a machine with no Redis server, and says so on standard error. cleanup
// closes the client and stops the embedded server, if any.
func connect() (rdb *redis.Client, cleanup func(), err error) {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, nil, fmt.Errorf("start embedded miniredis: %w", err)
		}
		fmt.Fprintf(os.Stderr, "REDIS_ADDR not set: using an embedded miniredis at %s\n", mr.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
		return rdb, func() { _ = rdb.Close(); mr.Close() }, nil
	}
	rdb = redis.NewClient(&redis.Options{Addr: addr})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, nil, fmt.Errorf("redis at %s: %w", addr, err)
	}
	return rdb, func() { _ = rdb.Close() }, nil
}
