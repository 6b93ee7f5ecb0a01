package redistest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	// proxyDialTimeout bounds the proxy's dial to its target for one
	// accepted connection.
	proxyDialTimeout = 5 * time.Second
	// proxyReadSize is the largest chunk read from a socket at once.
	proxyReadSize = 32 << 10
	// proxyWriteSlice bounds one write call, so that a write blocked by a
	// peer that does not read still notices Stall and Close.
	proxyWriteSlice = 20 * time.Millisecond
)

// Proxy is a fault-injecting TCP proxy on loopback, made by [StartProxy].
// It forwards every connection it accepts to its target and can hold,
// delay or cut the traffic, to test how code behaves when the network to
// Redis fails.
//
// Data is forwarded in chunks as it is read; each direction of each
// connection keeps its data in order whatever is injected. Data the proxy
// holds (while stalled, delayed or held) is kept in memory. A half-close
// (FIN) is forwarded like data, in order, so a connection closed by one side
// while stalled stays open on the other side until [Proxy.Resume].
//
// Its methods are safe for concurrent use.
type Proxy struct {
	target string
	ln     net.Listener
	ctx    context.Context // cancelled by close: aborts dials to the target
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the proxy started

	mu        sync.Mutex
	writeIdle *sync.Cond // signalled when writing drops to 0; uses mu
	closed    bool
	conns     map[*proxyConn]struct{}
	stalled   bool
	resumed   chan struct{} // closed by Resume; replaced by Stall
	writing   int           // write calls in progress
	delay     time.Duration // added to server->client data read from now on
	holds     []*proxyHold  // unclaimed HoldNextReply holds, oldest first
}

// proxyConn is one client connection and the proxy's connection to the
// target made for it.
type proxyConn struct {
	p              *Proxy
	client, server *net.TCPConn
	done           chan struct{} // closed when the connection is torn down
	closeOnce      sync.Once
	eofs           atomic.Int32 // directions whose EOF has been forwarded
}

// proxyChunk is data read from one side, waiting to be written to the
// other, or the end of that side's data.
type proxyChunk struct {
	data []byte
	eof  bool
	at   time.Time  // not to be written before
	hold *proxyHold // not to be written before released, when set
}

// proxyHold is one HoldNextReply.
type proxyHold struct {
	released chan struct{}
	once     sync.Once
}

// proxyQueue is the data of one direction of a connection, in order,
// between the goroutine reading it and the one writing it.
type proxyQueue struct {
	mu    sync.Mutex
	items []proxyChunk
	ready chan struct{} // capacity 1: something was pushed
}

// StartProxy listens on a free 127.0.0.1 port and forwards every accepted
// connection to target ("host:port"). It is closed in t.Cleanup: it stops
// accepting, cuts every connection and waits for all of its goroutines.
// StartProxy calls t.Fatal when it cannot listen.
//
// A connection the proxy accepts while target refuses it is reset at once.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy to %s: %v", target, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Proxy{
		target:  target,
		ln:      ln,
		ctx:     ctx,
		cancel:  cancel,
		conns:   map[*proxyConn]struct{}{},
		resumed: make(chan struct{}),
	}
	close(p.resumed)
	p.writeIdle = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.acceptLoop()
	t.Cleanup(p.close)
	return p
}

// Addr returns the address clients dial to go through the proxy,
// "127.0.0.1:port".
func (p *Proxy) Addr() string {
	return p.ln.Addr().String()
}

// Client returns a new client that connects through the proxy, closed in
// t.Cleanup. Each opts function may change the options (read timeout,
// retries, pool size...) before the client is made; Addr is set to
// [Proxy.Addr] beforehand.
func (p *Proxy) Client(t testing.TB, opts ...func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{Addr: p.Addr()}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { closeClient(t, rdb) })
	return rdb
}

// Stall holds every byte in both directions, on existing and new
// connections, until [Proxy.Resume]: like a network partition in which
// packets are held, not refused. Connections stay open: new ones are still
// accepted (and dialed to the target) but no byte flows on them either, and
// a side that closes its connection meanwhile has its FIN held too. A
// command sent while stalled does not reach the server and gets no reply,
// so the client waits for its own read timeout.
//
// When Stall returns, no byte is written by the proxy until Resume; data
// that the proxy had already finished writing before was delivered. Calling
// Stall while stalled does nothing.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.stalled {
		p.stalled = true
		p.resumed = make(chan struct{})
	}
	// A write in progress may be blocked by a peer that does not read; it
	// gives up within proxyWriteSlice and waits for Resume with the rest.
	for p.writing > 0 {
		p.writeIdle.Wait()
	}
}

// Resume ends a [Proxy.Stall]: the data held meanwhile flows again, in
// order, followed by what comes next. Calling Resume when not stalled does
// nothing.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled {
		p.stalled = false
		close(p.resumed)
	}
}

// Cut closes every open connection at once, both the client's and the
// server's side, as a network failure would: both sockets are reset (RST),
// so a client blocked reading fails at once and the server drops the
// connection. Data the proxy held for them is lost. New connections are
// accepted as usual. Cut returns how many connections it cut; [Proxy.Conns]
// counts none of them once Cut returns.
//
// go-redis may report the reset as EOF (its socket health checks peek at
// the socket and so can consume the reset), and it resends a command that
// failed with EOF on a new connection when its MaxRetries allows: a test
// that wants the failure itself sets MaxRetries to -1.
func (p *Proxy) Cut() int {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	p.mu.Unlock()
	for _, pc := range conns {
		pc.close(true)
	}
	return len(conns)
}

// DelayReplies delays the data flowing from the server to the client by d,
// on every connection, existing and new; 0 turns the delay off. Data is
// delivered in order, late: each chunk the proxy reads from the server from
// now on is written to the client d after it was read, and never before the
// chunks read before it. Data from the client to the server is not delayed.
//
// It is used to make a client's read timeout fire while the server has
// already executed the command, so go-redis resends it. Note that the delay
// applies to the handshake (HELLO) of a connection opened meanwhile too, so
// with a read timeout shorter than d a client cannot open new connections:
// a resend happens only on a connection that was already open, and such a
// test first opens the connections it needs.
func (p *Proxy) DelayReplies(d time.Duration) {
	if d < 0 {
		d = 0
	}
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// HoldNextReply holds the next chunk of data that the proxy reads from the
// server, on whichever connection it comes (the reply to the next command
// sent, when one client is busy), until the returned release function is
// called; later data on that connection waits behind it. Other connections
// are unaffected. Each call holds one more chunk: the first chunk read
// after the call that no earlier hold has taken. Calling release more than
// once is fine.
func (p *Proxy) HoldNextReply() (release func()) {
	h := &proxyHold{released: make(chan struct{})}
	p.mu.Lock()
	p.holds = append(p.holds, h)
	p.mu.Unlock()
	return func() { h.once.Do(func() { close(h.released) }) }
}

// Conns is the number of connections currently open through the proxy: a
// connection counts from when the proxy has connected it to the target
// until both of its sides are closed, or it is cut.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// pendingHolds returns the number of HoldNextReply holds that no chunk has
// taken yet.
func (p *Proxy) pendingHolds() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.holds)
}

// close stops accepting, cuts every connection and waits for every
// goroutine of the proxy to end.
func (p *Proxy) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	_ = p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

// acceptLoop accepts connections until the listener is closed.
func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure such as too many open files.
			select {
			case <-p.ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		p.wg.Add(1)
		go p.serve(c.(*net.TCPConn))
	}
}

// serve connects c to the target and starts forwarding.
func (p *Proxy) serve(client *net.TCPConn) {
	defer p.wg.Done()
	d := net.Dialer{Timeout: proxyDialTimeout}
	s, err := d.DialContext(p.ctx, "tcp", p.target)
	if err != nil {
		_ = client.SetLinger(0)
		_ = client.Close()
		return
	}
	pc := &proxyConn{p: p, client: client, server: s.(*net.TCPConn), done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pc.close(true)
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()

	toServer := newProxyQueue()
	toClient := newProxyQueue()
	p.wg.Add(4)
	go pc.read(pc.client, toServer, false)
	go pc.write(pc.server, toServer)
	go pc.read(pc.server, toClient, true)
	go pc.write(pc.client, toClient)
}

// read reads src until EOF or an error, queueing what it reads. fromServer
// tells that src is the server's side, to which DelayReplies and
// HoldNextReply apply.
func (pc *proxyConn) read(src *net.TCPConn, q *proxyQueue, fromServer bool) {
	defer pc.p.wg.Done()
	buf := make([]byte, proxyReadSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			c := proxyChunk{data: append([]byte(nil), buf[:n]...)}
			if fromServer {
				c.at, c.hold = pc.p.claim()
			}
			q.push(c)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				c := proxyChunk{eof: true}
				if fromServer {
					c.at = time.Now().Add(pc.p.currentDelay())
				}
				q.push(c)
			} else {
				// Reset, or closed by Cut or Close.
				pc.close(true)
			}
			return
		}
	}
}

// claim returns when a chunk just read from a server may be written to its
// client, and takes the oldest pending hold for it, if any.
func (p *Proxy) claim() (time.Time, *proxyHold) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var h *proxyHold
	if len(p.holds) > 0 {
		h = p.holds[0]
		p.holds[0] = nil
		p.holds = p.holds[1:]
	}
	return time.Now().Add(p.delay), h
}

// currentDelay returns the delay set by DelayReplies.
func (p *Proxy) currentDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

// write writes the chunks of q to dst, in order, each when its time has
// come, it is released and the proxy is not stalled. An EOF is forwarded as
// a half-close; once both directions have forwarded theirs the connection
// is closed.
func (pc *proxyConn) write(dst *net.TCPConn, q *proxyQueue) {
	defer pc.p.wg.Done()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		c, ok := q.pop(pc.done)
		if !ok {
			return
		}
		if wait := time.Until(c.at); wait > 0 {
			if timer == nil {
				timer = time.NewTimer(wait)
			} else {
				timer.Reset(wait)
			}
			select {
			case <-timer.C:
			case <-pc.done:
				return
			}
		}
		if c.hold != nil {
			select {
			case <-c.hold.released:
			case <-pc.done:
				return
			}
		}
		if c.eof {
			if !pc.p.beginWrite(pc.done) {
				return
			}
			err := dst.CloseWrite()
			pc.p.endWrite()
			if err != nil || pc.eofs.Add(1) == 2 {
				pc.close(err != nil)
			}
			return
		}
		if err := pc.p.writeAll(dst, c.data, pc.done); err != nil {
			pc.close(true)
			return
		}
	}
}

// writeAll writes b to dst in calls of at most proxyWriteSlice each, each
// made only while the proxy is not stalled.
func (p *Proxy) writeAll(dst *net.TCPConn, b []byte, done <-chan struct{}) error {
	for len(b) > 0 {
		if !p.beginWrite(done) {
			return net.ErrClosed
		}
		err := dst.SetWriteDeadline(time.Now().Add(proxyWriteSlice))
		var n int
		if err == nil {
			n, err = dst.Write(b)
		}
		p.endWrite()
		b = b[n:]
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
	}
	return nil
}

// beginWrite waits until the proxy is not stalled and counts a write in
// progress, or returns false when done is closed first.
func (p *Proxy) beginWrite(done <-chan struct{}) bool {
	for {
		p.mu.Lock()
		if !p.stalled {
			p.writing++
			p.mu.Unlock()
			return true
		}
		resumed := p.resumed
		p.mu.Unlock()
		select {
		case <-resumed:
		case <-done:
			return false
		}
	}
}

// endWrite ends a write counted by beginWrite.
func (p *Proxy) endWrite() {
	p.mu.Lock()
	p.writing--
	if p.writing == 0 {
		p.writeIdle.Broadcast()
	}
	p.mu.Unlock()
}

// close tears the connection down, resetting both sockets when reset is
// set, and forgets it.
func (pc *proxyConn) close(reset bool) {
	pc.closeOnce.Do(func() {
		close(pc.done)
		if reset {
			_ = pc.client.SetLinger(0)
			_ = pc.server.SetLinger(0)
		}
		_ = pc.client.Close()
		_ = pc.server.Close()
		pc.p.mu.Lock()
		delete(pc.p.conns, pc)
		pc.p.mu.Unlock()
	})
}

func newProxyQueue() *proxyQueue {
	return &proxyQueue{ready: make(chan struct{}, 1)}
}

// push appends c.
func (q *proxyQueue) push(c proxyChunk) {
	q.mu.Lock()
	q.items = append(q.items, c)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// pop removes and returns the oldest chunk, waiting for one; it returns
// false when done is closed first.
func (q *proxyQueue) pop(done <-chan struct{}) (proxyChunk, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			c := q.items[0]
			q.items[0] = proxyChunk{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return c, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-done:
			return proxyChunk{}, false
		}
	}
}
