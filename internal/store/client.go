// Package store is the one place redelay talks to Redis. Every command and
// script goes through it, with untyped bytes in and out, so the policies that
// decide whether a call is safe live once:
//
//   - Scripts run as EVALSHA, then EVAL when the server answers NOSCRIPT.
//   - Calls whose second run would differ from the first (a pop) are sent
//     with go-redis's retries off: go-redis resends a command after a lost
//     reply, and a resent pop would pop another item while the first is
//     lost. Every other call is idempotent, by design (leases named by
//     tokens the client chose, offers recorded under a nonce, moves that
//     find nothing to move the second time), so a resend is harmless.
//   - Blocking waits are sized to the client's read timeout and to Redis's
//     timer tick, so a healthy server never makes the client time out.
//   - [Await] lets a caller stop waiting for a call (its context ended, its
//     queue closed) without abandoning the reply on a connection: the call
//     finishes in the background and a late handler gives back what it took.
package store

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxBlock is the longest single server-side block of a blocking wait.
// Waiting calls loop such blocks, so a dead connection is noticed within
// about this long plus the client's read timeout.
const MaxBlock = 500 * time.Millisecond

// tickSlack is how much later than asked Redis may end a block: it times
// out blocked clients on its timer tick (1000/hz ms, 100 ms by default).
const tickSlack = 150 * time.Millisecond

// minBlock is the shortest block worth sending; a client whose read timeout
// leaves less uses go-redis's typed blocking command instead (see wait).
const minBlock = 20 * time.Millisecond

// ErrStopped is returned by Await when its stop channel closes first.
var ErrStopped = errors.New("store: stopped")

// Client wraps a go-redis client with redelay's call policies.
type Client struct {
	rdb redis.UniversalClient
	// block is the longest block sent as a fractional timeout through Do:
	// the client's read timeout less Redis's tick, at most MaxBlock. Zero
	// when the read timeout is too short for that: waits then use typed
	// commands, whose read deadline go-redis extends by the block.
	block time.Duration
}

// New wraps rdb.
func New(rdb redis.UniversalClient) *Client {
	return &Client{rdb: rdb, block: blockBudget(readTimeout(rdb))}
}

// Redis returns the wrapped client, for the pub/sub connection of the
// transfer service (the only long-lived connection redelay holds).
func (c *Client) Redis() redis.UniversalClient { return c.rdb }

func readTimeout(rdb redis.UniversalClient) time.Duration {
	switch x := rdb.(type) {
	case *redis.Client:
		return x.Options().ReadTimeout
	case *redis.ClusterClient:
		return x.Options().ReadTimeout
	default:
		return 3 * time.Second // go-redis's default
	}
}

func blockBudget(rt time.Duration) time.Duration {
	if rt < 0 { // no read deadline
		return MaxBlock
	}
	if rt == 0 {
		rt = 3 * time.Second
	}
	b := min(MaxBlock, rt-tickSlack)
	if b < minBlock {
		return 0
	}
	return b
}

// LimitBlock lowers the client's longest block to d when d is shorter
// (and at least minBlock): waits then loop shorter blocks, and a call left
// in flight when its caller leaves ends sooner. Call it before the client
// is used.
func (c *Client) LimitBlock(d time.Duration) {
	if d >= minBlock && c.block > d {
		c.block = d
	}
}

// Block is how long one server-side block may last for a call with ctx:
// the client's budget, or less when ctx's deadline is nearer. At least
// 1 ms.
func (c *Client) Block(ctx context.Context) time.Duration {
	b := c.block
	if b == 0 {
		b = time.Second // the typed command's whole second
	}
	if dl, ok := ctx.Deadline(); ok {
		b = min(b, time.Until(dl))
	}
	return max(b, time.Millisecond)
}

// noRetry marks a command that go-redis must not resend after a lost reply.
type noRetry struct{ *redis.Cmd }

// NoRetry implements redis.Cmder.
func (noRetry) NoRetry() bool { return true }

// do sends a command; with retry false, go-redis does not resend it.
func (c *Client) do(ctx context.Context, retry bool, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, args...)
	if retry {
		_ = c.rdb.Process(ctx, cmd)
	} else {
		_ = c.rdb.Process(ctx, noRetry{cmd})
	}
	return cmd
}

// eval runs s with EVALSHA, then EVAL when the server does not know it,
// and again while the server answers that it did not run it (see
// didNotRun), for at most tryAgainFor.
func (c *Client) eval(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := c.evalTry(ctx, s, keys, args...)
	if cmd.Err() != nil && didNotRun(cmd.Err()) { // the closure only on this rare path
		cmd = untilRun(ctx, cmd, func() *redis.Cmd { return c.evalTry(ctx, s, keys, args...) })
	}
	return cmd
}

// untilRun sends a call again, with try, while the server answers that it
// did not run it (see didNotRun), for at most tryAgainFor; cmd is the
// first try's reply.
func untilRun(ctx context.Context, cmd *redis.Cmd, try func() *redis.Cmd) *redis.Cmd {
	deadline := time.Now().Add(tryAgainFor)
	for attempt := 0; cmd.Err() != nil && didNotRun(cmd.Err()); attempt++ {
		if time.Now().After(deadline) || sleepCtx(ctx, tryAgainPause(attempt)) != nil {
			break
		}
		cmd = try()
	}
	return cmd
}

// evalTry is one try of eval.
func (c *Client) evalTry(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := s.EvalSha(ctx, c.rdb, keys, args...)
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		cmd = s.Eval(ctx, c.rdb, keys, args...)
	}
	return cmd
}

// evalOnce is eval for a script that must not run twice (it pops): go-redis
// does not resend it after a lost reply.
func (c *Client) evalOnce(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	argv := func(first ...any) []any {
		out := append(first, len(keys))
		for _, k := range keys {
			out = append(out, k)
		}
		return append(out, args...)
	}
	try := func() *redis.Cmd {
		cmd := c.do(ctx, false, argv("evalsha", s.Hash())...)
		if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// NOSCRIPT: the call did nothing. Load the script (on every node
			// of a Cluster that answers for these keys) and send it again.
			if err := s.Load(ctx, c.rdb).Err(); err != nil {
				return cmd
			}
			cmd = c.do(ctx, false, argv("evalsha", s.Hash())...)
		}
		return cmd
	}
	// A reply saying the script did not run (a slot on the move) is safe
	// to act on, even for a call that must not run twice.
	return untilRun(ctx, try(), try)
}

// secs formats a block for a blocking command.
func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
}

// Calls counts calls that Await left to finish in the background, so that
// their owner can wait for them (a bounded wait: Wait). The zero value is
// ready to use.
type Calls struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0, for waiters
}

func (c *Calls) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *Calls) done() {
	c.mu.Lock()
	c.n--
	if c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
	c.mu.Unlock()
}

// Wait waits until no call is running, or for at most d; it reports
// whether none is.
func (c *Calls) Wait(d time.Duration) bool {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return true
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

// Await runs call in a goroutine of its own and waits for its result, for
// ctx to end or for stop to close, whichever comes first, and then returns
// ctx's error or ErrStopped. The call itself is given ctx without its
// cancellation and goes on: go-redis then reads its reply (never leaving a
// connection half-read), and late receives the result, to give back what
// the call took (a popped item, a lease). bg counts calls in flight. With a
// ctx that cannot end and no stop channel, call runs in the caller's
// goroutine.
func Await[R any](ctx context.Context, stop <-chan struct{}, bg *Calls, call func(context.Context) (R, error), late func(R, error)) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if ctx.Done() == nil && stop == nil {
		return call(ctx)
	}
	select {
	case <-stop:
		return zero, ErrStopped
	default:
	}
	type result struct {
		v   R
		err error
	}
	done := make(chan result, 1)
	var mu sync.Mutex
	abandoned := false
	bg.add()
	go func() {
		defer bg.done()
		v, err := call(context.WithoutCancel(ctx))
		mu.Lock()
		if !abandoned {
			done <- result{v, err} // buffered: never blocks
			mu.Unlock()
			return
		}
		mu.Unlock()
		if late != nil {
			late(v, err)
		}
	}()
	var why error
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		why = ctx.Err()
	case <-stop:
		why = ErrStopped
	}
	mu.Lock()
	select {
	case r := <-done: // finished meanwhile: use it after all
		mu.Unlock()
		return r.v, r.err
	default:
	}
	abandoned = true
	mu.Unlock()
	return zero, why
}

// Go runs f in a goroutine counted by c.
func (c *Calls) Go(f func()) {
	c.add()
	go func() {
		defer c.done()
		f()
	}()
}
