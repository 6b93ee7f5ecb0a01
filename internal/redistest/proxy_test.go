package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// proxyCtx returns a context for one proxy test, cancelled when it ends.
func proxyCtx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// proxyWaitFor polls cond until it holds, failing the test after timeout.
func proxyWaitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// proxyIsTimeout reports whether err is a network timeout.
func proxyIsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// proxyResp encodes a command in RESP.
func proxyResp(args ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return b.String()
}

// proxyRawConn dials the proxy with a bare TCP connection, closed when the test
// ends.
func proxyRawConn(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dialing the proxy: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// proxySend writes a command on a raw connection.
func proxySend(t *testing.T, c net.Conn, args ...string) {
	t.Helper()
	if _, err := c.Write([]byte(proxyResp(args...))); err != nil {
		t.Fatalf("writing %v: %v", args, err)
	}
}

// proxyReadLine reads one reply line (a simple, error or integer reply) within
// timeout.
func proxyReadLine(c net.Conn, r *bufio.Reader, timeout time.Duration) (string, error) {
	if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}

func TestProxyForwards(t *testing.T) {
	t.Parallel()
	c := proxyCtx(t)
	p := StartProxy(t, sharedServer(t).Addr())
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr = %q, want a 127.0.0.1 address", p.Addr())
	}
	rdb := p.Client(t)
	if rdb.Options().Addr != p.Addr() {
		t.Fatalf("client Addr = %q, want %q", rdb.Options().Addr, p.Addr())
	}
	key := QueueName(t)
	// Large enough to cross many reads and writes of the proxy.
	big := strings.Repeat("0123456789abcdef", 256<<10) // 4 MiB
	if err := rdb.Set(c, key, big, 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := rdb.Get(c, key).Result(); err != nil || got != big {
		t.Fatalf("GET returned %d bytes, %v; want the %d bytes set", len(got), err, len(big))
	}
	cmds, err := rdb.Pipelined(c, func(pipe redis.Pipeliner) error {
		for i := 0; i < 100; i++ {
			pipe.Incr(c, key+"-n")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	for i, cmd := range cmds {
		if got := cmd.(*redis.IntCmd).Val(); got != int64(i+1) {
			t.Fatalf("INCR %d of the pipeline = %d, want %d", i+1, got, i+1)
		}
	}
	// go-redis may run pipelines on connections of their own, which
	// PoolStats does not count.
	if n, total := p.Conns(), int(rdb.PoolStats().TotalConns); n < total || n < 1 {
		t.Fatalf("Conns = %d, want at least the client's %d pooled connections", n, total)
	}
	if err := rdb.Close(); err != nil {
		t.Fatalf("closing the client: %v", err)
	}
	proxyWaitFor(t, 5*time.Second, "the proxy to see the client's connections closed", func() bool { return p.Conns() == 0 })
}

func TestProxyStallTimesOutThenResumes(t *testing.T) {
	t.Parallel()
	c := proxyCtx(t)
	p := StartProxy(t, sharedServer(t).Addr())
	rdb := p.Client(t, func(o *redis.Options) {
		o.ReadTimeout = 200 * time.Millisecond
		o.MaxRetries = -1 // one attempt: a retry would wait for a new connection's stalled handshake
	})
	key := QueueName(t)
	if err := rdb.Set(c, key, "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	p.Stall()
	start := time.Now()
	err := rdb.Get(c, key).Err()
	elapsed := time.Since(start)
	if !proxyIsTimeout(err) {
		t.Fatalf("GET while stalled: err = %v, want a timeout", err)
	}
	if elapsed < 200*time.Millisecond {
		t.Fatalf("GET while stalled failed after %v, before the 200ms read timeout", elapsed)
	}
	t.Logf("GET while stalled: %v after %v", err, elapsed.Round(time.Millisecond))
	// go-redis closed the connection that timed out, but its FIN is held
	// with the GET: the proxy's connection to the server stays open.
	if n := p.Conns(); n != 1 {
		t.Fatalf("Conns while stalled = %d, want 1", n)
	}

	p.Resume()
	if got, err := rdb.Get(c, key).Result(); err != nil || got != "v" {
		t.Fatalf("GET after Resume = %q, %v; want v", got, err)
	}
	// The held GET and FIN flowed: the old connection closes, the new
	// one stays.
	proxyWaitFor(t, 5*time.Second, "the stalled connection to close after Resume", func() bool { return p.Conns() == 1 })
}

func TestProxyStallHoldsBothDirectionsInOrder(t *testing.T) {
	t.Parallel()
	c := proxyCtx(t)
	direct := sharedServer(t).Client(t)
	p := StartProxy(t, sharedServer(t).Addr())
	key := QueueName(t)
	conn, r := proxyRawConn(t, p)
	proxySend(t, conn, "PING")
	if line, err := proxyReadLine(conn, r, 5*time.Second); err != nil || line != "+PONG" {
		t.Fatalf("PING = %q, %v; want +PONG", line, err)
	}

	p.Stall()
	p.Stall() // a second Stall changes nothing
	for i := 0; i < 3; i++ {
		proxySend(t, conn, "INCR", key)
	}
	// A connection opened while stalled is held too.
	conn2, r2 := proxyRawConn(t, p)
	proxySend(t, conn2, "INCR", key)
	if line, err := proxyReadLine(conn, r, 150*time.Millisecond); !proxyIsTimeout(err) {
		t.Fatalf("read while stalled = %q, %v; want a timeout", line, err)
	}
	if line, err := proxyReadLine(conn2, r2, 10*time.Millisecond); !proxyIsTimeout(err) {
		t.Fatalf("read on a new connection while stalled = %q, %v; want a timeout", line, err)
	}
	if err := direct.Get(c, key).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET on the server while stalled: err = %v, want redis.Nil (no INCR may have reached it)", err)
	}
	proxyWaitFor(t, 5*time.Second, "both connections to be open while stalled", func() bool { return p.Conns() == 2 })

	p.Resume()
	p.Resume() // a second Resume changes nothing
	var got []string
	for i := 0; i < 3; i++ {
		line, err := proxyReadLine(conn, r, 5*time.Second)
		if err != nil {
			t.Fatalf("reply %d after Resume: %v", i+1, err)
		}
		got = append(got, line)
	}
	line, err := proxyReadLine(conn2, r2, 5*time.Second)
	if err != nil {
		t.Fatalf("reply on the second connection after Resume: %v", err)
	}
	// The first connection's INCRs are in order; the second connection's
	// may come before, between or after them.
	var first []int
	for _, l := range got {
		var n int
		if _, err := fmt.Sscanf(l, ":%d", &n); err != nil {
			t.Fatalf("replies after Resume = %q, want integers", got)
		}
		first = append(first, n)
	}
	if !(first[0] < first[1] && first[1] < first[2]) {
		t.Fatalf("replies on one connection after Resume = %v, want increasing", got)
	}
	if v, err := direct.Get(c, key).Int(); err != nil || v != 4 {
		t.Fatalf("counter after Resume = %d, %v; want 4 (second connection got %s)", v, err, line)
	}
}

func TestProxyCutFailsBlockedCommand(t *testing.T) {
	t.Parallel()
	c := proxyCtx(t)
	direct := sharedServer(t).Client(t)
	p := StartProxy(t, sharedServer(t).Addr())
	name := QueueName(t)
	rdb := p.Client(t, func(o *redis.Options) {
		o.ClientName = name
		// go-redis resends a command that failed with EOF: without this
		// it would send the BLPOP again on a new connection and block.
		o.MaxRetries = -1
	})
	if err := rdb.Ping(c).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	blocked := func() bool {
		list, err := direct.ClientList(c).Result()
		if err != nil {
			t.Fatalf("CLIENT LIST: %v", err)
		}
		for _, l := range strings.Split(list, "\n") {
			if strings.Contains(l, " name="+name+" ") && strings.Contains(l, " cmd=blpop ") && strings.Contains(l, " flags=b ") {
				return true
			}
		}
		return false
	}

	done := make(chan error, 1)
	go func() { done <- rdb.BLPop(c, 0, name).Err() }()
	proxyWaitFor(t, 5*time.Second, "the BLPOP to block on the server", blocked)

	start := time.Now()
	if n := p.Cut(); n != 1 {
		t.Fatalf("Cut = %d, want 1", n)
	}
	if n := p.Conns(); n != 0 {
		t.Fatalf("Conns after Cut = %d, want 0", n)
	}
	select {
	case err := <-done:
		// The proxy resets the connection; go-redis peeks at its sockets,
		// which can consume the reset, and then reports EOF.
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
			t.Fatalf("BLPOP after Cut: err = %v, want connection reset or EOF", err)
		}
		t.Logf("BLPOP failed %v after Cut: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(5 * time.Second):
		t.Fatal("BLPOP still blocked 5s after Cut")
	}
	proxyWaitFor(t, 5*time.Second, "the server to drop the cut connection", func() bool { return !blocked() })

	// New connections go through as usual.
	if err := rdb.Ping(c).Err(); err != nil {
		t.Fatalf("PING after Cut: %v", err)
	}
	if n := p.Cut(); n != 1 {
		t.Fatalf("second Cut = %d, want 1", n)
	}
}

func TestProxyDelayRepliesMakesGoRedisResend(t *testing.T) {
	t.Parallel()
	c := proxyCtx(t)
	direct := sharedServer(t).Client(t)
	p := StartProxy(t, sharedServer(t).Addr())
	key := QueueName(t)
	rdb := p.Client(t, func(o *redis.Options) {
		o.ReadTimeout = 100 * time.Millisecond
		o.MaxRetries = 1
	})
	// Open two connections before the delay: the first attempt's connection
	// is dropped after its timeout, and a new one could not finish its
	// handshake (HELLO) within the read timeout, so the resend needs the
	// second one already open.
	c1, c2 := rdb.Conn(), rdb.Conn()
	for _, cn := range []*redis.Conn{c1, c2} {
		if err := cn.Ping(c).Err(); err != nil {
			t.Fatalf("PING: %v", err)
		}
	}
	c1.Close()
	c2.Close()
	if st := rdb.PoolStats(); st.IdleConns != 2 {
		t.Fatalf("pool has %d idle connections, want 2", st.IdleConns)
	}

	p.DelayReplies(300 * time.Millisecond)
	start := time.Now()
	err := rdb.Incr(c, key).Err()
	t.Logf("INCR with replies delayed: %v after %v", err, time.Since(start).Round(time.Millisecond))
	if !proxyIsTimeout(err) {
		t.Fatalf("INCR with replies delayed past the read timeout: err = %v, want a timeout", err)
	}
	// Both attempts reached the server although the client saw neither
	// reply.
	proxyWaitFor(t, 5*time.Second, "the server to execute the INCR twice", func() bool {
		n, err := direct.Get(c, key).Int()
		return err == nil && n >= 2
	})
	if n, err := direct.Get(c, key).Int(); err != nil || n != 2 {
		t.Fatalf("counter on the server = %d, %v; want 2 (sent once, resent once)", n, err)
	}

	p.DelayReplies(0)
	if n, err := rdb.Incr(c, key).Result(); err != nil || n != 3 {
		t.Fatalf("INCR without delay = %d, %v; want 3", n, err)
	}
}

func TestProxyDelayRepliesKeepsOrder(t *testing.T) {
	t.Parallel()
	c := proxyCtx(t)
	direct := sharedServer(t).Client(t)
	p := StartProxy(t, sharedServer(t).Addr())
	key := QueueName(t)
	conn, r := proxyRawConn(t, p)

	p.DelayReplies(200 * time.Millisecond)
	start := time.Now()
	proxySend(t, conn, "INCR", key)
	proxyWaitFor(t, 5*time.Second, "the first INCR", func() bool { return direct.Get(c, key).Val() == "1" })
	// Replies read from now on are not delayed, but must not overtake the
	// delayed one.
	p.DelayReplies(0)
	proxySend(t, conn, "INCR", key)
	proxyWaitFor(t, 5*time.Second, "the second INCR", func() bool { return direct.Get(c, key).Val() == "2" })
	var got []string
	for i := 0; i < 2; i++ {
		line, err := proxyReadLine(conn, r, 5*time.Second)
		if err != nil {
			t.Fatalf("reply %d: %v", i+1, err)
		}
		got = append(got, line)
	}
	if fmt.Sprint(got) != "[:1 :2]" {
		t.Fatalf("replies = %q, want [:1 :2] in that order", got)
	}
	t.Logf("both replies after %v", time.Since(start).Round(time.Millisecond))
}

func TestProxyHoldNextReply(t *testing.T) {
	t.Parallel()
	c := proxyCtx(t)
	direct := sharedServer(t).Client(t)
	p := StartProxy(t, sharedServer(t).Addr())
	key := QueueName(t)
	rdb := p.Client(t)
	if err := rdb.Ping(c).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	release := p.HoldNextReply()
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := rdb.Incr(c, key).Result()
		done <- result{n, err}
	}()
	proxyWaitFor(t, 5*time.Second, "the INCR's reply to be held", func() bool { return p.pendingHolds() == 0 })
	if n, err := direct.Get(c, key).Int(); err != nil || n != 1 {
		t.Fatalf("counter on the server = %d, %v; want 1", n, err)
	}

	// Other connections are unaffected.
	other := p.Client(t)
	for i := 0; i < 3; i++ {
		if err := other.Ping(c).Err(); err != nil {
			t.Fatalf("PING on another connection while a reply is held: %v", err)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("INCR returned %d, %v while its reply was held", r.n, r.err)
	case <-time.After(50 * time.Millisecond):
	}

	release()
	select {
	case r := <-done:
		if r.err != nil || r.n != 1 {
			t.Fatalf("INCR after release = %d, %v; want 1", r.n, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("INCR still waiting 5s after release")
	}
	release() // releasing twice is fine
	if n, err := rdb.Incr(c, key).Result(); err != nil || n != 2 {
		t.Fatalf("next INCR = %d, %v; want 2 (only one reply is held)", n, err)
	}
}

func TestProxyCloseWhileHolding(t *testing.T) {
	t.Parallel()
	var conn net.Conn
	var r *bufio.Reader
	t.Run("proxy", func(t *testing.T) {
		p := StartProxy(t, sharedServer(t).Addr())
		var err error
		if conn, err = net.Dial("tcp", p.Addr()); err != nil {
			t.Fatalf("dialing the proxy: %v", err)
		}
		r = bufio.NewReader(conn)
		stalled, _ := proxyRawConn(t, p)
		proxyWaitFor(t, 5*time.Second, "two connections", func() bool { return p.Conns() == 2 })
		p.HoldNextReply()
		p.DelayReplies(time.Hour)
		proxySend(t, conn, "PING")
		proxyWaitFor(t, 5*time.Second, "the PING's reply to be held", func() bool { return p.pendingHolds() == 0 })
		p.Stall()
		proxySend(t, stalled, "PING")
		// The proxy is closed when this subtest ends, with data held,
		// delayed and stalled.
	})
	if conn == nil {
		t.Fatal("the subtest did not connect")
	}
	defer conn.Close()
	if line, err := proxyReadLine(conn, r, 5*time.Second); err == nil || proxyIsTimeout(err) {
		t.Fatalf("read after the proxy was closed = %q, %v; want EOF or reset", line, err)
	}
}
