package systemtest_test

// Tests of what the queue does when the network to Redis fails: replies
// lost and resent by go-redis, stalls, cuts. Each test runs its own
// redis-server with a fault-injecting proxy in front of it
// (redistest.StartProxy); the queue under test talks through the proxy, and
// the test looks at the server's keys through a direct client.
//
// A held reply (Proxy.HoldNextReply) makes the client's read timeout fire
// after the server ran the command; go-redis then sends it again on another
// connection. The tests check that it did (the server ran the command
// twice, and the call took the read timeout) before they check the outcome,
// so that none passes without the resend it is about.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// rsEnv is one test's redis-server, a proxy in front of it, a client
// through the proxy (rdb, for the queue under test) and a direct one (for
// producers that must not be disturbed, and for looking at keys).
type rsEnv struct {
	t      *testing.T
	ctx    context.Context
	srv    *redistest.Server
	direct *redis.Client
	p      *redistest.Proxy
	rdb    *redis.Client
	rt     time.Duration // rdb's read timeout
	name   string        // the queue's name, and rdb's client name
	k      keys.Set
}

// rsStart starts a server and a proxy, and returns a client through the
// proxy with read timeout rt and maxRetries. Every script is loaded first,
// so that EVALSHA never answers NOSCRIPT (the NOSCRIPT reply would be the
// one held, not the script's). Pipelines use the main pool, which the
// tests fill with idle connections beforehand (rsEnv.warm).
func rsStart(t *testing.T, rt time.Duration, maxRetries int) *rsEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	srv := redistest.StartServer(t)
	direct := srv.Client(t)
	rsLoadScripts(t, ctx, direct)
	p := redistest.StartProxy(t, srv.Addr())
	name := redistest.QueueName(t)
	rdb := p.Client(t, func(o *redis.Options) {
		o.ClientName = name
		o.ReadTimeout = rt
		o.MaxRetries = maxRetries
		o.PipelinePoolSize = -1
	})
	return &rsEnv{t: t, ctx: ctx, srv: srv, direct: direct, p: p, rdb: rdb, rt: rt, name: name, k: redistest.KeysOf(name)}
}

func rsLoadScripts(t *testing.T, ctx context.Context, rdb *redis.Client) {
	t.Helper()
	for _, s := range []*redis.Script{lua.Offer, lua.Transfer, lua.Remove, lua.Receive, lua.Extend,
		lua.Settle, lua.Reclaim, lua.Redrive, lua.Release, lua.Unclaim} {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			t.Fatalf("SCRIPT LOAD: %v", err)
		}
	}
}

// warm leaves n idle connections in rdb's pool, so that a call and its
// resend use connections already open: no handshake reply comes through
// the proxy while a reply is held.
func (e *rsEnv) warm(n int) {
	e.t.Helper()
	conns := make([]*redis.Conn, n)
	for i := range conns {
		conns[i] = e.rdb.Conn()
		if err := conns[i].Ping(e.ctx).Err(); err != nil {
			e.t.Fatalf("PING through the proxy: %v", err)
		}
	}
	for _, c := range conns {
		_ = c.Close()
	}
	if idle := e.rdb.PoolStats().IdleConns; idle < uint32(n) {
		e.t.Fatalf("the pool has %d idle connections, want %d", idle, n)
	}
}

// waitFor polls cond until it holds, failing the test after timeout.
func (e *rsEnv) waitFor(timeout time.Duration, what string, cond func() bool) {
	e.t.Helper()
	rsWaitFor(e.t, timeout, what, cond)
}

func rsWaitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// calls is how many times the server ran cmd (scripts' own commands
// included), from INFO commandstats.
func (e *rsEnv) calls(cmd string) int64 {
	e.t.Helper()
	info, err := e.direct.Info(e.ctx, "commandstats").Result()
	if err != nil {
		e.t.Fatalf("INFO commandstats: %v", err)
	}
	prefix := "cmdstat_" + cmd + ":calls="
	for _, line := range strings.Split(info, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
		if !ok {
			continue
		}
		if i := strings.IndexByte(rest, ','); i >= 0 {
			rest = rest[:i]
		}
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			e.t.Fatalf("INFO commandstats: %q: %v", line, err)
		}
		return n
	}
	return 0
}

// blocked is how many connections of rdb are blocked in BLMOVE on the
// server.
func (e *rsEnv) blocked() int {
	e.t.Helper()
	list, err := e.direct.ClientList(e.ctx).Result()
	if err != nil {
		e.t.Fatalf("CLIENT LIST: %v", err)
	}
	n := 0
	for _, line := range strings.Split(list, "\n") {
		f := map[string]string{}
		for _, kv := range strings.Fields(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		if f["name"] == e.name && f["cmd"] == "blmove" && strings.Contains(f["flags"], "b") {
			n++
		}
	}
	return n
}

// quiet waits until the background work of a consuming queue on rdb is
// idle: its wake-up subscription is up, and no script ran for 300 ms. With
// a sweep of an hour and long leases nothing then runs until a wake-up
// message, so the next reply through the proxy is the test's.
func (e *rsEnv) quiet() {
	e.t.Helper()
	e.waitFor(10*time.Second, "the wake-up subscription", func() bool {
		m, err := e.direct.PubSubNumSub(e.ctx, e.k.Wake).Result()
		return err == nil && m[e.k.Wake] == 1
	})
	last, since := e.calls("evalsha"), time.Now()
	e.waitFor(10*time.Second, "the background work to go idle", func() bool {
		if n := e.calls("evalsha"); n != last {
			last, since = n, time.Now()
			return false
		}
		return time.Since(since) >= 300*time.Millisecond
	})
}

// holdReply runs op while the proxy holds the next reply from the server,
// releases the hold once op returned (the held reply then goes to a
// connection go-redis dropped), and returns how long op took.
func (e *rsEnv) holdReply(op func()) time.Duration {
	release := e.p.HoldNextReply()
	defer release()
	start := time.Now()
	op()
	return time.Since(start)
}

func (e *rsEnv) llen(key string) int64 {
	e.t.Helper()
	n, err := e.direct.LLen(e.ctx, key).Result()
	if err != nil {
		e.t.Fatalf("LLEN %s: %v", key, err)
	}
	return n
}

func (e *rsEnv) zcard(key string) int64 {
	e.t.Helper()
	n, err := e.direct.ZCard(e.ctx, key).Result()
	if err != nil {
		e.t.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

func (e *rsEnv) hlen(key string) int64 {
	e.t.Helper()
	n, err := e.direct.HLen(e.ctx, key).Result()
	if err != nil {
		e.t.Fatalf("HLEN %s: %v", key, err)
	}
	return n
}

// listIDs returns the IDs of the envelopes in a list, head first.
func (e *rsEnv) listIDs(key string) []string {
	e.t.Helper()
	raws, err := e.direct.LRange(e.ctx, key, 0, -1).Result()
	if err != nil {
		e.t.Fatalf("LRANGE %s: %v", key, err)
	}
	return rsIDs(e.t, raws)
}

// hashIDs returns the IDs of the envelopes that are a hash's values.
func (e *rsEnv) hashIDs(key string) []string {
	e.t.Helper()
	raws, err := e.direct.HVals(e.ctx, key).Result()
	if err != nil {
		e.t.Fatalf("HVALS %s: %v", key, err)
	}
	return rsIDs(e.t, raws)
}

func rsIDs(t *testing.T, raws []string) []string {
	t.Helper()
	ids := make([]string, len(raws))
	for i, r := range raws {
		id, err := envelope.PeekID([]byte(r))
		if err != nil {
			t.Fatalf("%q is no envelope: %v", r, err)
		}
		ids[i] = id
	}
	return ids
}

// retryMembers is how many members of the retry set carry id.
func (e *rsEnv) retryMembers(id string) int {
	e.t.Helper()
	members, err := e.direct.ZRange(e.ctx, e.k.Retry, 0, -1).Result()
	if err != nil {
		e.t.Fatalf("ZRANGE %s: %v", e.k.Retry, err)
	}
	n := 0
	for _, m := range members {
		if strings.Contains(m, id) {
			n++
		}
	}
	return n
}

// giveBackClaimed makes the reclaimer give back every item in the claimed
// list that it first saw at least minAge ago, as it would after
// store.ClaimedHold: it runs the reclaim script once (which records when it
// first saw each item), backdates those first-seen times by ClaimedHold,
// and runs it again. It returns how many items were given back.
func (e *rsEnv) giveBackClaimed(minAge time.Duration) int64 {
	e.t.Helper()
	sq := store.New(e.direct).Partition(e.k)
	r, err := sq.Reclaim(e.ctx, 500, 10)
	if err != nil {
		e.t.Fatalf("reclaim: %v", err)
	}
	seen, err := e.direct.HGetAll(e.ctx, e.k.Seen).Result()
	if err != nil {
		e.t.Fatalf("HGETALL %s: %v", e.k.Seen, err)
	}
	aged := 0
	for env, v := range seen {
		at, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			e.t.Fatalf("first-seen time %q: %v", v, err)
		}
		if r.NowMs-at < minAge.Milliseconds() {
			continue
		}
		if err := e.direct.HSet(e.ctx, e.k.Seen, env, at-store.ClaimedHold.Milliseconds()).Err(); err != nil {
			e.t.Fatalf("HSET %s: %v", e.k.Seen, err)
		}
		aged++
	}
	if aged == 0 {
		return r.GivenBack
	}
	r2, err := sq.Reclaim(e.ctx, 500, 10)
	if err != nil {
		e.t.Fatalf("reclaim: %v", err)
	}
	return r.GivenBack + r2.GivenBack
}

// rsResult is what a consumer goroutine got.
type rsResult struct {
	v   string
	err error
	at  time.Time
}

// TestResentImmediateOfferStoredOnce: blocking.Queue.Offer whose reply is
// lost is sent again by go-redis; the item is stored once (offer.lua records
// the call's outcome under its lane; before, push.lua stored it twice).
func TestResentImmediateOfferStoredOnce(t *testing.T) {
	t.Parallel()

	t.Run("resend answered", func(t *testing.T) {
		t.Parallel()
		e := rsStart(t, 500*time.Millisecond, 2)
		q := blocking.New[string](e.rdb, e.name)
		rsChecked(t, e.ctx, q)
		e.warm(3)
		evals := e.calls("evalsha")
		var id string
		var err error
		took := e.holdReply(func() { id, err = q.Offer(e.ctx, "once") })
		runs := e.calls("evalsha") - evals
		t.Logf("Offer with its reply held: %q, %v after %v; the script ran %d times", id, err, took.Round(time.Millisecond), runs)
		if runs < 2 || took < e.rt {
			t.Fatalf("go-redis did not resend the offer (%d runs in %v, read timeout %v): the test proves nothing", runs, took, e.rt)
		}
		if id == "" {
			t.Errorf("Offer returned no ID (err %v)", err)
		}
		if err != nil {
			t.Logf("the resend timed out too: %v", err)
		}
		if got := e.listIDs(e.k.Ready); len(got) != 1 || (id != "" && got[0] != id) {
			t.Fatalf("ready list holds %q after a resent offer of %q, want it once", got, id)
		}
	})

	// Both sends lose their reply: Offer fails, but the item was stored
	// (once), so the ID must come back with the error, as it does when
	// ctx ends while an offer is on its way.
	t.Run("resend lost too", func(t *testing.T) {
		t.Parallel()
		e := rsStart(t, 300*time.Millisecond, 1)
		q := blocking.New[string](e.rdb, e.name)
		rsChecked(t, e.ctx, q)
		e.warm(3)
		evals := e.calls("evalsha")
		release2 := e.p.HoldNextReply() // taken by the first reply, then the resend's
		defer release2()
		var id string
		var err error
		took := e.holdReply(func() { id, err = q.Offer(e.ctx, "once") })
		release2()
		runs := e.calls("evalsha") - evals
		t.Logf("Offer with both replies held: %q, %v after %v; the script ran %d times", id, err, took.Round(time.Millisecond), runs)
		if runs != 2 || err == nil {
			t.Fatalf("want two runs and an error (both replies lost); got %d runs, err %v", runs, err)
		}
		ready := e.listIDs(e.k.Ready)
		if len(ready) != 1 {
			t.Fatalf("ready list holds %q after an offer sent twice, want one item", ready)
		}
		if id == "" {
			t.Errorf("BUG: Offer sent (and stored: ready holds %q) but its replies lost returned %q with %v: "+
				"the ID must come back with an error whose outcome is unknown, as it does for a context error", ready, id, err)
		} else if id != ready[0] {
			t.Errorf("Offer returned ID %q, stored %q", id, ready[0])
		}
	})

	// A copy of an offer call held in the network arrives after the client
	// gave the call up and sent its next call on the same lane. offer.lua
	// promises that a late copy changes nothing.
	t.Run("late copy after the lane's next call", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		srv := redistest.StartServer(t)
		direct := srv.Client(t)
		rsLoadScripts(t, ctx, direct)
		k := redistest.KeysOf(redistest.QueueName(t))
		// Connections go through p1, or through p2 while viaP2 is set: the
		// first send's reply is held by p1, the resend is held (not
		// delivered to the server) by a stalled p2.
		p1, p2 := redistest.StartProxy(t, srv.Addr()), redistest.StartProxy(t, srv.Addr())
		var viaP2 atomic.Bool
		rdb := redis.NewClient(&redis.Options{
			Addr: p1.Addr(), ReadTimeout: 300 * time.Millisecond, MaxRetries: 1, PipelinePoolSize: -1,
			Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
				addr := p1.Addr()
				if viaP2.Load() {
					addr = p2.Addr()
				}
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			},
		})
		t.Cleanup(func() { _ = rdb.Close() })
		q := blocking.New[string](rdb, k.Name)
		rsChecked(t, ctx, q)
		// Idle connections, used last-in first-out: c1 (p1) then c2 (p2).
		c1 := rdb.Conn()
		if err := c1.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		viaP2.Store(true)
		c2 := rdb.Conn()
		if err := c2.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		viaP2.Store(false)
		_ = c2.Close()
		_ = c1.Close()

		release := p1.HoldNextReply()
		defer release()
		p2.Stall()
		defer p2.Resume()
		idA, errA := q.Offer(ctx, "A")
		t.Logf("offer A, first reply held, resend held in the network: %q, %v", idA, errA)
		if errA == nil {
			t.Fatal("offer A succeeded, want both of its sends lost")
		}
		if got := rsListIDs(t, ctx, direct, k.Ready); len(got) != 1 {
			t.Fatalf("ready holds %q after offer A's first send, want one item", got)
		}
		idStoredA := rsListIDs(t, ctx, direct, k.Ready)[0]
		// Offer A's sender returns its lane to the free list a moment after
		// Offer returns; nothing the test can observe tells when, so this
		// waits, and the lane keys below check that offer B reused it.
		time.Sleep(200 * time.Millisecond)
		idB, errB := q.Offer(ctx, "B")
		if errB != nil {
			t.Fatalf("offer B: %v", errB)
		}
		lanes, err := direct.Keys(ctx, k.Lane("*")).Result()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("lane keys after offer B: %q", lanes)
		if len(lanes) != 1 {
			t.Fatalf("offer B used a lane of its own (%d lane keys): the late copy cannot collide with it; the test proves nothing", len(lanes))
		}
		// The copy of A held in the network arrives.
		p2.Resume()
		rsWaitFor(t, 5*time.Second, "the late copy to reach the server and its connection to close", func() bool { return p2.Conns() == 0 })
		release()
		got := rsListIDs(t, ctx, direct, k.Ready)
		nA := 0
		for _, id := range got {
			if id == idStoredA {
				nA++
			}
		}
		t.Logf("ready after the late copy: %q (A is %s, B is %s)", got, idStoredA, idB)
		if nA != 1 || len(got) != 2 {
			t.Errorf("BUG: a late copy of offer A, arriving after the lane's next call (offer B), stored A again: ready holds %q, A %d times; "+
				"want A and B once each", got, nA)
		}
	})
}

// rsChecked makes q's one-time checks, of its number of partitions and of
// its server's eviction policy (the first calls of a process read them),
// before a test holds or counts replies.
func rsChecked(t *testing.T, ctx context.Context, q *blocking.Queue[string]) {
	t.Helper()
	if _, err := q.Stats(ctx); err != nil {
		t.Fatalf("Stats: %v", err)
	}
}

// rsListIDs lists the IDs of the envelopes in a list, through rdb.
func rsListIDs(t *testing.T, ctx context.Context, rdb *redis.Client, key string) []string {
	t.Helper()
	raws, err := rdb.LRange(ctx, key, 0, -1).Result()
	if err != nil {
		t.Fatalf("LRANGE %s: %v", key, err)
	}
	return rsIDs(t, raws)
}

// TestResentWithIDOfferIsNotDuplicate: a delayed offer WithID whose reply
// is lost and resent does not find itself a duplicate.
func TestResentWithIDOfferIsNotDuplicate(t *testing.T) {
	t.Parallel()
	e := rsStart(t, 500*time.Millisecond, 2)
	bq := blocking.New[string](e.rdb, e.name)
	dq := delayed.New(bq, delayed.WithoutTransfer())
	t.Cleanup(func() { _ = dq.Close(); _ = bq.Close() })
	rsChecked(t, e.ctx, bq)
	e.warm(3)
	evals := e.calls("evalsha")
	var id string
	var err error
	took := e.holdReply(func() { id, err = dq.Offer(e.ctx, "order", time.Hour, delayed.WithID("order-1")) })
	runs := e.calls("evalsha") - evals
	t.Logf("Offer WithID with its reply held: %q, %v after %v; the script ran %d times", id, err, took.Round(time.Millisecond), runs)
	if runs < 2 || took < e.rt {
		t.Fatalf("go-redis did not resend the offer (%d runs in %v, read timeout %v): the test proves nothing", runs, took, e.rt)
	}
	if errors.Is(err, delayed.ErrDuplicate) {
		t.Fatalf("a resent offer found itself a duplicate: %v", err)
	}
	if err != nil || id != "order-1" {
		t.Fatalf("Offer = %q, %v; want order-1, nil", id, err)
	}
	if n, items := e.zcard(e.k.Delayed), e.hlen(e.k.Items); n != 1 || items != 1 {
		t.Fatalf("%d pending items (%d in the items hash), want 1", n, items)
	}
	if n := e.llen(e.k.Ready); n != 0 {
		t.Fatalf("%d ready items, want none", n)
	}
	// The item pending is the one offered: another offer of its ID is a
	// duplicate.
	if _, err := dq.Offer(e.ctx, "again", time.Hour, delayed.WithID("order-1")); !errors.Is(err, delayed.ErrDuplicate) {
		t.Fatalf("second Offer of order-1: %v, want ErrDuplicate", err)
	}
}

// rsConsumerQueue opens the queue under test through the proxy for a test
// that holds a reply while consuming: its background work (started by a
// Poll that finds nothing) has gone idle, and stays idle (an hour's sweep,
// leases of a minute), and the pool has idle connections for the call and
// its resend.
func rsConsumerQueue(e *rsEnv) *blocking.Queue[string] {
	e.t.Helper()
	q := blocking.New[string](e.rdb, e.name, blocking.WithSweepInterval(time.Hour), blocking.WithVisibilityTimeout(time.Minute))
	e.t.Cleanup(func() { _ = q.Close() })
	if _, ok, err := q.Poll(e.ctx, 0); err != nil || ok {
		e.t.Fatalf("Poll of an empty queue: %v, %v", ok, err)
	}
	e.warm(3)
	e.quiet()
	return q
}

// rsHeldAttempts is how many times a test that holds a reply tries again
// when the reply held was another's (a pub/sub health check's PONG can come
// at any time).
const rsHeldAttempts = 3

// TestResentReceiveReturnsSameLease: a receive whose reply is lost is sent
// again by go-redis; the resend returns the lease the first run made
// instead of leasing another item (which nobody would hold).
func TestResentReceiveReturnsSameLease(t *testing.T) {
	t.Parallel()
	e := rsStart(t, 500*time.Millisecond, 2)
	q := rsConsumerQueue(e)
	producer := blocking.New[string](e.direct, e.name)
	for attempt := 1; ; attempt++ {
		idA, err := producer.Offer(e.ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		idB, err := producer.Offer(e.ctx, "b")
		if err != nil {
			t.Fatal(err)
		}
		runs0 := e.calls("hexists") // once per run of receive.lua
		var d *blocking.Delivery[string]
		took := e.holdReply(func() { d, err = q.Receive(e.ctx) })
		runs := e.calls("hexists") - runs0
		if err != nil {
			t.Fatalf("Receive with its reply held: %v", err)
		}
		t.Logf("attempt %d: Receive with its reply held: %s %q after %v; the script ran %d times",
			attempt, d.ID, d.Value, took.Round(time.Millisecond), runs)
		if runs < 2 || took < e.rt {
			if attempt == rsHeldAttempts {
				t.Fatalf("go-redis never resent the receive in %d attempts: the test proves nothing", attempt)
			}
			// The hold took another reply; this Receive went normally.
			for _, d := range []*blocking.Delivery[string]{d, rsReceive(t, e.ctx, q)} {
				if err := d.Ack(e.ctx); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}

		if d.ID != idA || d.Value != "a" {
			t.Fatalf("Receive = %s %q, want %s \"a\"", d.ID, d.Value, idA)
		}
		if n, inflight := e.zcard(e.k.Leases), e.hashIDs(e.k.Inflight); n != 1 || len(inflight) != 1 || inflight[0] != idA {
			t.Fatalf("%d leases, in flight %q after a resent receive; want one lease, of %s", n, inflight, idA)
		}
		if ready := e.listIDs(e.k.Ready); len(ready) != 1 || ready[0] != idB {
			t.Fatalf("ready holds %q after a resent receive, want %s (not leased by the resend)", ready, idB)
		}
		if n := e.llen(e.k.Claimed); n != 0 {
			t.Fatalf("%d items claimed, want none", n)
		}
		if err := d.Ack(e.ctx); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		d2 := rsReceive(t, e.ctx, q)
		if d2.ID != idB || d2.Value != "b" {
			t.Fatalf("next Receive = %s %q, want %s \"b\"", d2.ID, d2.Value, idB)
		}
		if err := d2.Ack(e.ctx); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		if n, m, r := e.zcard(e.k.Leases), e.hlen(e.k.Inflight), e.llen(e.k.Ready); n+m+r != 0 {
			t.Fatalf("%d leases, %d in flight, %d ready after both acks; want none", n, m, r)
		}
		return
	}
}

func rsReceive(t *testing.T, ctx context.Context, q *blocking.Queue[string]) *blocking.Delivery[string] {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return d
}

// TestResentAckIsNotLeaseLost: an Ack whose reply is lost is resent by
// go-redis and finds the lease gone (its first send removed it); Ack
// succeeds, since the lease could not have expired yet.
func TestResentAckIsNotLeaseLost(t *testing.T) {
	t.Parallel()
	rsResentSettle(t, false)
}

// TestResentNackIsNotLeaseLost is TestResentAckIsNotLeaseLost for Nack
// (settle.lua).
func TestResentNackIsNotLeaseLost(t *testing.T) {
	t.Parallel()
	rsResentSettle(t, true)
}

func rsResentSettle(t *testing.T, nack bool) {
	e := rsStart(t, 500*time.Millisecond, 2)
	producer := blocking.New[string](e.direct, e.name)
	op, counter := "Ack", "hdel" // the ack pipeline's HDEL
	if nack {
		op, counter = "Nack", "evalsha" // nothing else runs a script meanwhile
		// A pending item due before the retry: settle.lua then publishes
		// no wake-up, whose message to the subscription would be the next
		// reply through the proxy instead of the nack's.
		seed := delayed.New(producer, delayed.WithoutTransfer())
		if _, err := seed.Offer(e.ctx, "seed", 30*time.Minute); err != nil {
			t.Fatal(err)
		}
		_ = seed.Close()
	}
	q := rsConsumerQueue(e)
	for attempt := 1; ; attempt++ {
		id, err := producer.Offer(e.ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		d := rsReceive(t, e.ctx, q)
		if d.ID != id {
			t.Fatalf("Receive = %s, want %s", d.ID, id)
		}
		runs0 := e.calls(counter)
		took := e.holdReply(func() {
			if nack {
				err = d.Nack(e.ctx, time.Hour)
			} else {
				err = d.Ack(e.ctx)
			}
		})
		runs := e.calls(counter) - runs0
		t.Logf("attempt %d: %s with its reply held: %v after %v; sent %d times", attempt, op, err, took.Round(time.Millisecond), runs)
		if err != nil {
			t.Fatalf("%s with its reply held and resent: %v (before the fix: ErrLeaseLost)", op, err)
		}
		if runs < 2 || took < e.rt {
			if attempt == rsHeldAttempts {
				t.Fatalf("go-redis never resent the %s in %d attempts: the test proves nothing", op, attempt)
			}
			continue // the hold took another reply; this one went normally
		}

		if n, m := e.zcard(e.k.Leases), e.hlen(e.k.Inflight); n+m != 0 {
			t.Fatalf("%d leases, %d in flight after %s, want none", n, m, op)
		}
		if ready, claimed := e.listIDs(e.k.Ready), e.llen(e.k.Claimed); len(ready)+int(claimed) != 0 {
			t.Fatalf("ready %q, %d claimed after %s; want nothing", ready, claimed, op)
		}
		want := 0
		if nack {
			want = 1
		}
		if n := e.retryMembers(id); n != want {
			t.Fatalf("%d retries of %s scheduled after %s, want %d", n, id, op, want)
		}
		// Counted once, though run twice: one settlement per attempt
		// of this loop.
		st, err := q.Stats(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := map[bool]int64{false: st.Processed, true: st.Failed}[nack]; got != int64(attempt) || st.Processed+st.Failed != int64(attempt) {
			t.Fatalf("after %d settlements, the last one sent twice: Processed %d, Failed %d", attempt, st.Processed, st.Failed)
		}
		// Settled here: a second settlement is refused.
		if err := d.Ack(e.ctx); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("Ack after %s: %v, want ErrLeaseLost", op, err)
		}
		return
	}
}

// TestWaitReplyLostItemNotLost: a consumer waits on an empty queue
// (BLMOVE ready -> claimed); an item arrives and is moved to the claimed
// list, and the reply carrying it is lost with the connection. The item is
// not lost: it stays claimed, and the reclaimer gives it back after
// store.ClaimedHold (simulated by backdating its first-seen time).
func TestWaitReplyLostItemNotLost(t *testing.T) {
	t.Parallel()
	for _, receive := range []bool{false, true} {
		name := "Take"
		if receive {
			name = "Receive"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rsWaitReplyLost(t, receive)
		})
	}
}

func rsWaitReplyLost(t *testing.T, receive bool) {
	e := rsStart(t, 2*time.Second, 3)
	q := blocking.New[string](e.rdb, e.name, blocking.WithSweepInterval(time.Hour))
	t.Cleanup(func() { _ = q.Close() })
	producer := blocking.New[string](e.direct, e.name)
	consume := func(ctx context.Context, q *blocking.Queue[string]) (string, error) {
		if !receive {
			return q.Take(ctx)
		}
		d, err := q.Receive(ctx)
		if err != nil {
			return "", err
		}
		return d.Value, d.Ack(ctx)
	}

	var id, value string
	var cancel context.CancelFunc
	var done chan rsResult
	for attempt := 1; ; attempt++ {
		var ctx context.Context
		ctx, cancel = context.WithCancel(e.ctx)
		done = make(chan rsResult, 1)
		go func() {
			v, err := consume(ctx, q)
			done <- rsResult{v, err, time.Now()}
		}()
		e.waitFor(10*time.Second, "the consumer to block in BLMOVE", func() bool { return e.blocked() >= 1 })
		e.p.Stall()
		value = fmt.Sprintf("item-%d", attempt)
		var err error
		if id, err = producer.Offer(e.ctx, value); err != nil {
			e.p.Resume()
			cancel()
			t.Fatal(err)
		}
		// Redis serves a blocked BLMOVE before it answers the offer.
		if e.llen(e.k.Claimed) == 1 {
			// The reply carrying the item is held by the stall: lose it.
			e.p.Cut()
			e.p.Resume()
			break
		}
		// The wait's block ended just before the offer (its empty reply
		// is held): the item is ready and the consumer gets it. Again.
		e.p.Resume()
		r := <-done
		cancel()
		t.Logf("attempt %d: the wait's block had ended; the consumer got %q, %v", attempt, r.v, r.err)
		if r.err != nil || r.v != value {
			t.Fatalf("consumer got %q, %v; want %q", r.v, r.err, value)
		}
		if attempt == 5 {
			t.Fatal("never offered an item while the consumer was blocked")
		}
	}
	defer cancel()

	// The consumer does not get the item: its reply is gone. go-redis sends
	// the wait again on a new connection (a cut is reported as EOF), and
	// the consumer goes on waiting.
	e.waitFor(10*time.Second, "the consumer to wait again after the cut", func() bool {
		return e.blocked() >= 1 || len(done) > 0
	})
	select {
	case r := <-done:
		if r.err == nil {
			t.Fatalf("consumer got %q although the reply carrying the item was lost", r.v)
		}
		t.Logf("the consumer failed after the cut: %v", r.err)
		done <- r
	default:
	}
	if claimed, ready := e.listIDs(e.k.Claimed), e.llen(e.k.Ready); len(claimed) != 1 || claimed[0] != id || ready != 0 {
		t.Fatalf("after the lost reply: claimed %q, %d ready; want %s claimed", claimed, ready, id)
	}
	cancel()
	select {
	case r := <-done:
		if r.err == nil {
			t.Fatalf("consumer got %q although the reply carrying the item was lost", r.v)
		}
		if !errors.Is(r.err, context.Canceled) {
			t.Logf("consumer ended with %v", r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("consumer still waiting 5s after its context was cancelled")
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}

	// The reclaimer records when it first sees the item and leaves it:
	// the consumer might still be about to take it.
	sq := store.New(e.direct).Partition(e.k)
	r1, err := sq.Reclaim(e.ctx, 500, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r1.GivenBack != 0 || e.llen(e.k.Claimed) != 1 {
		t.Fatalf("reclaimer gave back %d items at once, %d still claimed; want it to keep the item for store.ClaimedHold", r1.GivenBack, e.llen(e.k.Claimed))
	}
	raw, err := e.direct.LIndex(e.ctx, e.k.Claimed, 0).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.direct.HExists(e.ctx, e.k.Seen, raw).Result(); err != nil || !ok {
		t.Fatalf("first-seen time of the claimed item recorded: %v, %v; want it recorded", ok, err)
	}
	// ClaimedHold later:
	if err := e.direct.HSet(e.ctx, e.k.Seen, raw, r1.NowMs-store.ClaimedHold.Milliseconds()-1000).Err(); err != nil {
		t.Fatal(err)
	}
	r2, err := sq.Reclaim(e.ctx, 500, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r2.GivenBack != 1 {
		t.Fatalf("reclaimer gave back %d items after store.ClaimedHold, want 1", r2.GivenBack)
	}
	if ready, claimed, seen := e.listIDs(e.k.Ready), e.llen(e.k.Claimed), e.hlen(e.k.Seen); len(ready) != 1 || ready[0] != id || claimed != 0 || seen != 0 {
		t.Fatalf("after the give-back: ready %q, %d claimed, %d first-seen times; want %s ready and nothing else", ready, claimed, seen, id)
	}

	// And a consumer gets it.
	q2 := blocking.New[string](e.rdb, e.name)
	t.Cleanup(func() { _ = q2.Close() })
	ctx, cancel2 := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel2()
	v, err := consume(ctx, q2)
	if err != nil || v != value {
		t.Fatalf("consumer after the give-back got %q, %v; want %q", v, err, value)
	}
	if n, c, m := e.llen(e.k.Ready), e.llen(e.k.Claimed), e.hlen(e.k.Inflight); n+c+m != 0 {
		t.Fatalf("%d ready, %d claimed, %d in flight after the item was consumed; want none", n, c, m)
	}
}

// TestTakeCancelledDuringStall: a waiting Take, Receive or Poll whose
// context is cancelled while the network is stalled returns at once; an
// item its abandoned wait took meanwhile is given back.
func TestTakeCancelledDuringStall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		consume func(context.Context, *blocking.Queue[string]) (string, error)
	}{
		{"Take", func(ctx context.Context, q *blocking.Queue[string]) (string, error) { return q.Take(ctx) }},
		{"Receive", func(ctx context.Context, q *blocking.Queue[string]) (string, error) {
			d, err := q.Receive(ctx)
			if err != nil {
				return "", err
			}
			return d.Value, d.Ack(ctx)
		}},
		{"Poll", func(ctx context.Context, q *blocking.Queue[string]) (string, error) {
			v, ok, err := q.Poll(ctx, 10*time.Second)
			if err == nil && !ok {
				err = errors.New("Poll found nothing")
			}
			return v, err
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := rsStart(t, 2*time.Second, 3)
			q := blocking.New[string](e.rdb, e.name, blocking.WithSweepInterval(time.Hour))
			t.Cleanup(func() { _ = q.Close() })
			producer := blocking.New[string](e.direct, e.name)

			ctx, cancel := context.WithCancel(e.ctx)
			defer cancel()
			done := make(chan rsResult, 1)
			go func() {
				v, err := c.consume(ctx, q)
				done <- rsResult{v, err, time.Now()}
			}()
			e.waitFor(10*time.Second, "the consumer to block in BLMOVE", func() bool { return e.blocked() >= 1 })
			e.p.Stall()
			t.Cleanup(e.p.Resume)
			id, err := producer.Offer(e.ctx, "meanwhile")
			if err != nil {
				t.Fatal(err)
			}
			claimed := e.llen(e.k.Claimed)
			start := time.Now()
			cancel()
			var r rsResult
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("still waiting 5s after its context was cancelled during a stall")
			}
			took := r.at.Sub(start)
			t.Logf("%s returned %v %v after cancel (the abandoned wait had claimed the item: %v)", c.name, r.err, took.Round(time.Millisecond), claimed == 1)
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("%s cancelled during a stall returned %q, %v; want context.Canceled", c.name, r.v, r.err)
			}
			if took > 500*time.Millisecond {
				t.Errorf("%s returned %v after its context was cancelled, want within 500ms", c.name, took)
			}

			e.p.Resume()
			ctx2, cancel2 := context.WithTimeout(e.ctx, 10*time.Second)
			defer cancel2()
			v, err := c.consume(ctx2, q)
			if err != nil || v != "meanwhile" {
				t.Fatalf("%s after the stall got %q, %v; want the item offered meanwhile (%s)", c.name, v, err, id)
			}
			if n, cl, m := e.llen(e.k.Ready), e.llen(e.k.Claimed), e.hlen(e.k.Inflight); n+cl+m != 0 {
				t.Fatalf("%d ready, %d claimed, %d in flight after the item was consumed; want none", n, cl, m)
			}
		})
	}
}

// TestCloseDuringStallIsPrompt: Close returns within about a second while
// the network is stalled, and the calls waiting on the queue return
// ErrClosed at once.
func TestCloseDuringStallIsPrompt(t *testing.T) {
	t.Parallel()
	e := rsStart(t, 2*time.Second, 3)
	q := blocking.New[string](e.rdb, e.name, blocking.WithSweepInterval(time.Hour))
	t.Cleanup(func() { _ = q.Close() })
	takeDone := make(chan rsResult, 1)
	go func() {
		v, err := q.Take(e.ctx)
		takeDone <- rsResult{v, err, time.Now()}
	}()
	var handled atomic.Int64
	consumeDone := make(chan rsResult, 1)
	go func() {
		err := q.Consume(e.ctx, func(context.Context, *blocking.Delivery[string]) error {
			handled.Add(1)
			return nil
		})
		consumeDone <- rsResult{"", err, time.Now()}
	}()
	// Take's wait and Consume's two receivers.
	e.waitFor(10*time.Second, "Take and Consume to block in BLMOVE", func() bool { return e.blocked() >= 3 })

	e.p.Stall()
	t.Cleanup(e.p.Resume)
	start := time.Now()
	if err := q.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	closeTook := time.Since(start)
	for _, c := range []struct {
		name string
		ch   chan rsResult
	}{{"Take", takeDone}, {"Consume", consumeDone}} {
		select {
		case r := <-c.ch:
			took := r.at.Sub(start)
			t.Logf("%s returned %v %v after Close began", c.name, r.err, took.Round(time.Millisecond))
			if !errors.Is(r.err, blocking.ErrClosed) {
				t.Errorf("%s returned %v when the queue closed, want ErrClosed", c.name, r.err)
			}
			if took > 500*time.Millisecond {
				t.Errorf("%s returned %v after Close began, want within 500ms", c.name, took)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s still waiting 5s after Close", c.name)
		}
	}
	t.Logf("Close took %v during the stall", closeTook.Round(time.Millisecond))
	if closeTook > 1500*time.Millisecond {
		t.Errorf("Close took %v during a stall, want at most 1.5s", closeTook)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("handler ran %d times on an empty queue", n)
	}
}

// TestOfferRespectsDeadlineDuringStall: while the network is stalled, a
// lone offer, sent on its caller's goroutine, returns at the client's read
// timeout (after go-redis's resends), not at its context's deadline, like
// a plain go-redis call; an offer made meanwhile, queued behind it, returns
// at its deadline. Both return their ID (the outcome is unknown), and the
// copies go-redis sent meanwhile, delivered once the network resumes,
// store each item once at most.
func TestOfferRespectsDeadlineDuringStall(t *testing.T) {
	t.Parallel()
	// A short read timeout: go-redis resends each offer during the stall,
	// and every copy reaches the server after Resume.
	e := rsStart(t, 150*time.Millisecond, 2)
	bq := blocking.New[string](e.rdb, e.name)
	dq := delayed.New(bq, delayed.WithoutTransfer())
	rsChecked(t, e.ctx, bq)
	e.warm(4)
	evals := e.calls("evalsha")

	e.p.Stall()
	t.Cleanup(e.p.Resume)
	type result struct {
		id   string
		err  error
		took time.Duration
	}
	offer := func(f func(context.Context) (string, error)) <-chan result {
		out := make(chan result, 1)
		go func() {
			ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
			defer cancel()
			start := time.Now()
			id, err := f(ctx)
			out <- result{id, err, time.Since(start)}
		}()
		return out
	}
	lone := offer(func(ctx context.Context) (string, error) { return bq.Offer(ctx, "now") })
	time.Sleep(20 * time.Millisecond) // the lone offer is on its way
	queued := offer(func(ctx context.Context) (string, error) { return dq.Offer(ctx, "later", time.Hour) })

	q := <-queued
	t.Logf("queued Offer during a stall: %q, %v after %v", q.id, q.err, q.took.Round(time.Millisecond))
	if !errors.Is(q.err, context.DeadlineExceeded) {
		t.Errorf("queued Offer during a stall: %v, want an error wrapping context.DeadlineExceeded", q.err)
	}
	if q.took > 400*time.Millisecond {
		t.Errorf("queued Offer with a 200ms deadline took %v during a stall, want at most 400ms", q.took)
	}
	if q.id == "" {
		t.Errorf("queued Offer sent during a stall returned no ID with %v (its outcome is unknown)", q.err)
	}
	l := <-lone
	t.Logf("lone Offer during a stall: %q, %v after %v", l.id, l.err, l.took.Round(time.Millisecond))
	if l.err == nil || l.id == "" {
		t.Errorf("lone Offer during a stall: %q, %v; want its ID with an error (its outcome is unknown)", l.id, l.err)
	}
	// Three reads of 150 ms and go-redis's backoff between them.
	if l.took < 300*time.Millisecond || l.took > 3*time.Second {
		t.Errorf("lone Offer took %v during a stall, want about three read timeouts of 150ms", l.took)
	}

	e.p.Resume()
	// Every copy held during the stall reaches the server: the offers'
	// background sends end (Close waits for them), and the connections
	// go-redis dropped close once their data went through.
	_ = dq.Close()
	_ = bq.Close()
	e.waitFor(10*time.Second, "the dropped connections to drain through the proxy", func() bool {
		return e.p.Conns() <= int(e.rdb.PoolStats().TotalConns)
	})
	runs := e.calls("evalsha") - evals
	ready, pending, items := e.llen(e.k.Ready), e.zcard(e.k.Delayed), e.hlen(e.k.Items)
	t.Logf("after Resume: the offer script ran %d times; %d ready, %d pending", runs, ready, pending)
	if ready > 1 || pending > 1 || items != pending {
		t.Fatalf("after Resume: %d ready, %d pending (%d in the items hash): an offer was stored twice", ready, pending, items)
	}
	if runs <= 2 {
		t.Fatalf("the offer script ran %d times for 2 offers: no copy sent during the stall reached the server, the test proves nothing", runs)
	}
}

// Test 9: connections cut while four consumers drain a queue.
const (
	cutItems     = 2000
	cutConsumers = 4
	cutCuts      = 9
)

// TestTakeConnectionCutMeasured measures, and documents: every connection
// through the proxy is cut 9 times while 4 consumers drain 2000 items. Take
// is at most once: a cut during its non-blocking pop loses that item (at
// most one per consumer per cut); an item whose blocking wait's reply is
// lost stays claimed until the reclaimer gives it back. Receive+Ack is at
// least once: nothing is lost, and items whose lease was lost come again.
func TestTakeConnectionCutMeasured(t *testing.T) {
	t.Parallel()
	t.Run("Take", func(t *testing.T) {
		t.Parallel()
		rsCutTake(t)
	})
	t.Run("ReceiveAck", func(t *testing.T) {
		t.Parallel()
		rsCutReceive(t)
	})
}

// rsCutLoad runs the producer (through the direct client) and the cutter:
// one Cut each time another tenth of the items was delivered. It returns
// when both are done, with the number of connections cut.
func rsCutLoad(t *testing.T, e *rsEnv, delivered *atomic.Int64) int {
	t.Helper()
	producer := blocking.New[int](e.direct, e.name)
	var wg sync.WaitGroup
	var cutConns atomic.Int64
	wg.Go(func() {
		for i := range cutItems {
			if _, err := producer.Offer(e.ctx, i); err != nil {
				t.Errorf("offer %d: %v", i, err)
				return
			}
		}
	})
	wg.Go(func() {
		deadline := time.Now().Add(20 * time.Second)
		for c := 1; c <= cutCuts; c++ {
			for delivered.Load() < int64(c*cutItems/(cutCuts+1)) {
				if time.Now().After(deadline) {
					t.Errorf("cut %d: only %d items delivered after 20s", c, delivered.Load())
					return
				}
				time.Sleep(time.Millisecond)
			}
			cutConns.Add(int64(e.p.Cut()))
		}
	})
	wg.Wait()
	return int(cutConns.Load())
}

func rsCutTake(t *testing.T) {
	e := rsStart(t, 3*time.Second, 3)
	q := blocking.New[int](e.rdb, e.name)
	t.Cleanup(func() { _ = q.Close() })
	counts := make([]atomic.Int32, cutItems)
	var delivered, takeErrs, strange atomic.Int64
	ctx, stop := context.WithCancel(e.ctx)
	var consumers sync.WaitGroup
	t.Cleanup(func() { stop(); consumers.Wait() })
	for range cutConsumers {
		consumers.Go(func() {
			for ctx.Err() == nil {
				v, err := q.Take(ctx)
				if err != nil {
					if errors.Is(err, blocking.ErrClosed) {
						return
					}
					if ctx.Err() == nil {
						takeErrs.Add(1)
					}
					continue
				}
				if v < 0 || v >= cutItems {
					strange.Add(1)
					continue
				}
				counts[v].Add(1)
				delivered.Add(1)
			}
		})
	}
	start := time.Now()
	cut := rsCutLoad(t, e, &delivered)
	if t.Failed() {
		t.FailNow()
	}
	// Drained: nothing ready, and the count steady (a Take that popped the
	// last items returns them at once).
	last := int64(-1)
	e.waitFor(20*time.Second, "the consumers to drain the queue", func() bool {
		n := delivered.Load()
		steady := n == last
		last = n
		return steady && e.llen(e.k.Ready) == 0
	})
	stop()
	consumers.Wait()
	if err := q.Close(); err != nil { // waits for abandoned calls to give back what they took
		t.Fatal(err)
	}
	drained := time.Since(start)

	// What is left: ready items (given back by abandoned calls) and items
	// whose wait's reply was lost (claimed, given back by the reclaimer
	// after store.ClaimedHold).
	claimed := e.llen(e.k.Claimed)
	givenBack := e.giveBackClaimed(0)
	if givenBack != claimed {
		t.Fatalf("reclaimer gave back %d of %d claimed items", givenBack, claimed)
	}
	left := make([]int, cutItems)
	readyLeft := e.llen(e.k.Ready) - givenBack
	direct := blocking.New[int](e.direct, e.name)
	for {
		v, ok, err := direct.Poll(e.ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		left[v]++
	}
	_ = direct.Close()
	if dead := e.llen(e.k.DeadReady); dead != 0 {
		t.Errorf("%d items dead-lettered", dead)
	}

	var lost, twice, deliveredOnce int
	var lostItems []int
	for v := range cutItems {
		n, l := int(counts[v].Load()), left[v]
		switch {
		case n+l == 0:
			lost++
			lostItems = append(lostItems, v)
		case n+l > 1:
			twice++
			t.Errorf("item %d delivered %d times and still queued %d times", v, n, l)
		}
		if n == 1 {
			deliveredOnce++
		}
	}
	t.Logf("Take, %d consumers, %d cuts (%d connections cut), %v: offered %d, delivered %d, "+
		"left in the queue %d (%d ready, %d claimed with their reply lost, given back by the reclaimer), "+
		"lost %d (%.2f per cut) %v; Take errors %d",
		cutConsumers, cutCuts, cut, drained.Round(time.Millisecond), cutItems, deliveredOnce,
		int(readyLeft+claimed), readyLeft, claimed, lost, float64(lost)/cutCuts, lostItems, takeErrs.Load())
	if strange.Load() != 0 {
		t.Errorf("%d values out of range delivered", strange.Load())
	}
	if twice != 0 {
		t.Errorf("%d items delivered more than once", twice)
	}
	if lost > cutConsumers*cutCuts {
		t.Errorf("%d items lost in %d cuts, want at most one per consumer per cut (%d)", lost, cutCuts, cutConsumers*cutCuts)
	}
}

func rsCutReceive(t *testing.T) {
	e := rsStart(t, 3*time.Second, 3)
	q := blocking.New[int](e.rdb, e.name, blocking.WithVisibilityTimeout(time.Second))
	t.Cleanup(func() { _ = q.Close() })
	counts := make([]atomic.Int32, cutItems)
	var delivered, recvErrs, ackErrs, strange atomic.Int64
	ctx, stop := context.WithCancel(e.ctx)
	var consumers sync.WaitGroup
	t.Cleanup(func() { stop(); consumers.Wait() })
	for range cutConsumers {
		consumers.Go(func() {
			for ctx.Err() == nil {
				d, err := q.Receive(ctx)
				if err != nil {
					if errors.Is(err, blocking.ErrClosed) {
						return
					}
					if ctx.Err() == nil {
						recvErrs.Add(1)
					}
					continue
				}
				if d.Value < 0 || d.Value >= cutItems {
					strange.Add(1)
				} else {
					counts[d.Value].Add(1)
					delivered.Add(1)
				}
				if err := d.Ack(ctx); err != nil && ctx.Err() == nil {
					ackErrs.Add(1)
				}
			}
		})
	}
	start := time.Now()
	cut := rsCutLoad(t, e, &delivered)
	if t.Failed() {
		t.FailNow()
	}
	unique := func() int {
		n := 0
		for v := range cutItems {
			if counts[v].Load() > 0 {
				n++
			}
		}
		return n
	}
	// Expired leases come back within the visibility timeout. An item
	// whose wait's reply was lost stays claimed for store.ClaimedHold:
	// give back those that sat there for half a second.
	var givenBack int64
	deadline := time.Now().Add(20 * time.Second)
	for unique() < cutItems {
		if time.Now().After(deadline) {
			var missing []int
			for v := range cutItems {
				if counts[v].Load() == 0 {
					missing = append(missing, v)
				}
			}
			t.Fatalf("items never delivered after 20s: %v; ready %d, claimed %d, leases %d, dead %d", missing,
				e.llen(e.k.Ready), e.llen(e.k.Claimed), e.zcard(e.k.Leases), e.llen(e.k.DeadReady))
		}
		if e.llen(e.k.Claimed) > 0 {
			givenBack += e.giveBackClaimed(500 * time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
	drained := time.Since(start)
	stop()
	consumers.Wait()
	if dead := e.llen(e.k.DeadReady); dead != 0 {
		t.Errorf("%d items dead-lettered", dead)
	}
	dups := 0
	for v := range cutItems {
		if n := int(counts[v].Load()); n > 1 {
			dups += n - 1
		}
	}
	t.Logf("Receive+Ack, %d consumers, %d cuts (%d connections cut), %v: offered %d, delivered %d (every one), "+
		"deliveries beyond the first %d, lost 0; claimed items given back %d; Receive errors %d, Ack errors %d",
		cutConsumers, cutCuts, cut, drained.Round(time.Millisecond), cutItems, unique(), dups, givenBack, recvErrs.Load(), ackErrs.Load())
	if strange.Load() != 0 {
		t.Errorf("%d values out of range delivered", strange.Load())
	}
}
