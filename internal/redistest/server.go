package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/osproc"
)

const (
	// readyTimeout bounds how long a freshly started server may take to
	// answer PING.
	readyTimeout = 10 * time.Second
	// stopTimeout bounds how long a server may take to exit after SHUTDOWN
	// before it is killed.
	stopTimeout = 10 * time.Second
	// startAttempts is how many ports are tried when the chosen one gets
	// taken between choosing it and the server binding it.
	startAttempts = 5
	// logName is the server's log file inside its data directory.
	logName = "redis.log"
	// confName is the configuration file, if any, inside the data
	// directory (see serverConfig.conf).
	confName = "redis.conf"
)

// errPortInUse reports that redis-server could not bind its port.
var errPortInUse = errors.New("port already in use")

// Server is a redis-server process the harness started.
//
// It listens on 127.0.0.1 only, keeps its data in a temporary directory of
// its own and is stopped, and the directory removed, when the test that
// started it ends. Its methods are safe for concurrent use.
type Server struct {
	bin  string
	cfg  serverConfig
	port int
	dir  string

	mu     sync.Mutex
	cmd    *exec.Cmd // nil while the process is not running
	closed bool
}

// serverConfig collects what [ServerOption]s set.
type serverConfig struct {
	aof  bool
	args []string
	// conf, when not empty, is written to confName in the data directory
	// and that file is given as redis-server's first argument, where it
	// must be to count as a configuration file. A sentinel needs one it
	// can rewrite (see sentinel.go).
	conf string
}

// ServerOption configures a server started by [StartServer].
type ServerOption func(*serverConfig)

// WithAOF turns on the append-only file with "appendonly yes" and
// "appendfsync always", so every acknowledged write survives
// [Server.Stop], [Server.Kill] and [Server.Restart].
func WithAOF() ServerOption {
	return func(c *serverConfig) { c.aof = true }
}

// WithArgs passes extra command-line arguments to redis-server, in its
// "--key value" form, for instance WithArgs("--maxmemory", "10mb"). They
// come after the harness's own arguments and so override them.
func WithArgs(args ...string) ServerOption {
	return func(c *serverConfig) { c.args = append(c.args, args...) }
}

// StartServer starts a redis-server dedicated to the calling test and
// waits until it answers PING. The server is killed and its data directory
// removed in t.Cleanup. StartServer calls t.Fatal when the server cannot be
// started, including when redis-server is not installed.
func StartServer(t testing.TB, opts ...ServerOption) *Server {
	t.Helper()
	var cfg serverConfig
	for _, o := range opts {
		o(&cfg)
	}
	s, err := startServer(cfg, freePort)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.close(); err != nil {
			t.Errorf("redistest: %v", err)
		}
	})
	return s
}

// Addr returns the server's address, "127.0.0.1:port". It does not change
// across [Server.Restart].
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Client returns a new client connected to the server. It is closed in
// t.Cleanup.
func (s *Server) Client(t testing.TB) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr()})
	t.Cleanup(func() { closeClient(t, rdb) })
	return rdb
}

// Kill sends SIGKILL to the server and waits for it to exit. Data not yet
// written to disk is lost. Kill does nothing if the server is not running.
func (s *Server) Kill() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	return nil
}

// Stop shuts the server down with SHUTDOWN SAVE when it persists data (with
// [WithAOF] or RDB save points given through [WithArgs]) and with SHUTDOWN
// NOSAVE otherwise, and waits for it to exit. A server that does not exit
// in time is killed and an error returned. The data directory is kept, so
// [Server.Restart] may follow. Stop does nothing if the server is not
// running.
func (s *Server) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Restart stops the server if it is running, then starts it again on the
// same port with the same data directory, so data it persisted (see
// [WithAOF]) is loaded again. It returns once the server answers PING.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("redis-server %s: restart after cleanup", s.Addr())
	}
	if err := s.stopLocked(); err != nil {
		return err
	}
	var err error
	for attempt := 0; attempt < startAttempts; attempt++ {
		if err = s.startLocked(); !errors.Is(err, errPortInUse) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

// startServer creates a data directory and starts redis-server in it on a
// port chosen by pickPort, choosing another port when the first gets taken.
func startServer(cfg serverConfig, pickPort func() (int, error)) (*Server, error) {
	bin, err := lookBinary("REDIS_SERVER", "redis-server", "redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("data directory for redis-server: %w", err)
	}
	if cfg.conf != "" {
		if err := os.WriteFile(filepath.Join(dir, confName), []byte(cfg.conf), 0o644); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("redis-server configuration file: %w", err)
		}
	}
	s := &Server{bin: bin, cfg: cfg, dir: dir}
	for attempt := 0; attempt < startAttempts; attempt++ {
		if s.port, err = pickPort(); err != nil {
			break
		}
		s.mu.Lock()
		err = s.startLocked()
		s.mu.Unlock()
		if !errors.Is(err, errPortInUse) {
			break
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// args returns redis-server's command line, without the program name.
func (s *Server) args() []string {
	var args []string
	if s.cfg.conf != "" {
		args = append(args, filepath.Join(s.dir, confName))
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, logName),
	)
	if s.cfg.aof {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else if !hasFlag(s.cfg.args, "--save") {
		args = append(args, "--save", "")
	}
	return append(args, s.cfg.args...)
}

// persistent reports whether the server is configured to keep data across
// a shutdown, through AOF or RDB save points.
func (s *Server) persistent() bool {
	if s.cfg.aof {
		return true
	}
	persist := false
	for i := 0; i+1 < len(s.cfg.args); i++ {
		switch key, val := s.cfg.args[i], s.cfg.args[i+1]; key {
		case "--appendonly":
			persist = strings.EqualFold(val, "yes")
		case "--save":
			persist = strings.TrimSpace(val) != ""
		}
	}
	return persist
}

// startLocked starts the process and waits until it answers PING. It
// returns an error wrapping errPortInUse when the port was taken.
func (s *Server) startLocked() error {
	logPath := filepath.Join(s.dir, logName)
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("redis-server log: %w", err)
	}
	var logStart int64
	if fi, err := logFile.Stat(); err == nil {
		logStart = fi.Size()
	}
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Dir = s.dir
	// An *os.File needs no copying goroutine: the child writes straight
	// into the log.
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	osproc.DieWithParent(cmd)
	err = cmd.Start()
	logFile.Close()
	if err != nil {
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	s.cmd = cmd

	deadline := time.Now().Add(readyTimeout)
	var lastErr error
	for {
		if exited(cmd.Process.Pid) {
			waitErr := cmd.Wait()
			s.cmd = nil
			tail := logTail(logPath, logStart)
			if strings.Contains(tail, "Address already in use") {
				return fmt.Errorf("redis-server on %s: %w\n%s", s.Addr(), errPortInUse, tail)
			}
			return fmt.Errorf("redis-server on %s exited during start (%v); log %s:\n%s", s.Addr(), waitErr, logPath, tail)
		}
		reply, err := command(s.Addr(), time.Second, "PING")
		if err == nil && reply == "PONG" {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("PING answered %q", reply)
		}
		lastErr = err
		if time.Now().After(deadline) {
			s.killLocked()
			return fmt.Errorf("redis-server on %s not ready after %v: %v; log %s:\n%s",
				s.Addr(), readyTimeout, lastErr, logPath, logTail(logPath, logStart))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopLocked shuts the process down gracefully, killing it if it does not
// exit in time.
func (s *Server) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	mode := "NOSAVE"
	if s.persistent() {
		mode = "SAVE"
	}
	_, shutErr := command(s.Addr(), 5*time.Second, "SHUTDOWN", mode)
	if shutErr == nil {
		// SHUTDOWN answers only when it fails; success closes the
		// connection.
		shutErr = errors.New("SHUTDOWN answered")
	}
	var rerr respError
	if errors.As(shutErr, &rerr) {
		// The server refused (for instance it could not save): make it
		// exit anyway, and report the refusal.
		s.killLocked()
		return fmt.Errorf("redis-server %s: SHUTDOWN %s: %v; log:\n%s",
			s.Addr(), mode, shutErr, logTail(filepath.Join(s.dir, logName), 0))
	}
	if !errors.Is(shutErr, io.EOF) {
		// The command could not be sent; SIGTERM shuts down the same way.
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
	}
	cmd := s.cmd
	s.cmd = nil
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("redis-server %s: after SHUTDOWN %s: %v", s.Addr(), mode, err)
		}
		return nil
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("redis-server %s: did not exit within %v of SHUTDOWN %s; killed; log:\n%s",
			s.Addr(), stopTimeout, mode, logTail(filepath.Join(s.dir, logName), 0))
	}
}

// killLocked kills the process, if any, and reaps it.
func (s *Server) killLocked() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait() // reports the kill; nothing else to learn
	s.cmd = nil
}

// close kills the process and removes the data directory. The server
// cannot be restarted afterwards.
func (s *Server) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("removing redis-server data directory: %w", err)
	}
	return nil
}

// lookBinary finds a program through the environment variable env or
// else PATH. pkg is the Debian package that provides it.
func lookBinary(env, name, pkg string) (string, error) {
	if p := os.Getenv(env); p != "" {
		path, err := exec.LookPath(p)
		if err != nil {
			return "", fmt.Errorf("%s not found: %s=%q is not an executable: %v", name, env, p, err)
		}
		return path, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found: install it with `sudo apt-get install %s` "+
			"or run ./scripts/test.sh (which installs it), or set %s", name, pkg, env)
	}
	return path, nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port, nil
}

// maxClusterPort keeps a cluster node's bus port, its port plus 10000,
// a valid port number.
const maxClusterPort = 55000

// freeClusterPort returns a loopback port below maxClusterPort that was
// free a moment ago, together with its cluster bus port (port+10000).
func freeClusterPort() (int, error) {
	for attempt := 0; attempt < 100; attempt++ {
		var port int
		if attempt < 50 {
			p, err := freePort()
			if err != nil {
				return 0, err
			}
			port = p
		} else {
			port = 20000 + rand.IntN(maxClusterPort-20000)
		}
		if port >= maxClusterPort || !portFree(port) || !portFree(port+10000) {
			continue
		}
		return port, nil
	}
	return 0, errors.New("no free loopback port pair (port, port+10000) found for a cluster node")
}

// portFree reports whether a loopback TCP port can be listened on.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// hasFlag reports whether args holds the flag name.
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == name {
			return true
		}
	}
	return false
}

// logTail returns the end of the log file at path, looking only at what
// was written from offset from on.
func logTail(path string, from int64) string {
	const maxTail = 4096
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if size := fi.Size(); size-from > maxTail {
		from = size - maxTail
	}
	b, err := io.ReadAll(io.NewSectionReader(f, from, fi.Size()-from))
	if err != nil {
		return fmt.Sprintf("(reading log: %v)", err)
	}
	if len(b) == 0 {
		return "(log empty)"
	}
	return strings.TrimRight(string(b), "\n")
}

// respError is an error reply from the server.
type respError string

func (e respError) Error() string { return string(e) }

// command sends one command over a fresh connection and returns its reply,
// for the harness's own use (readiness, SHUTDOWN, CLUSTER INFO) without a
// client and its goroutines. It understands simple, error, integer and
// bulk string replies; an error reply is returned as a respError.
func command(addr string, timeout time.Duration, args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	var req strings.Builder
	fmt.Fprintf(&req, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&req, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, req.String()); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '+', ':':
		return line[1:], nil
	case '-':
		return "", respError(line[1:])
	case '$':
		n, err := strconv.Atoi(line[1:])
		if err != nil {
			return "", fmt.Errorf("bad bulk length %q", line)
		}
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return "", fmt.Errorf("unsupported reply %q", line)
	}
}

// closeClient closes a client at the end of a test; closing one the test
// already closed is fine.
func closeClient(t testing.TB, c io.Closer) {
	if err := c.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
		t.Errorf("redistest: closing client: %v", err)
	}
}

// replicaSyncTimeout bounds StartReplica's wait for the first sync.
const replicaSyncTimeout = 20 * time.Second

// StartReplica starts a redis-server dedicated to the calling test as a
// replica of master (REPLICAOF), and waits until both report the link up
// and the first sync done. Like [StartServer], it is killed in t.Cleanup
// and calls t.Fatal when it cannot be started or does not sync within 20
// seconds.
func StartReplica(t testing.TB, master *Server, opts ...ServerOption) *Server {
	t.Helper()
	r := StartServer(t, opts...)
	if _, err := command(r.Addr(), time.Second, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.port)); err != nil {
		t.Fatalf("redistest: REPLICAOF %s on %s: %v", master.Addr(), r.Addr(), err)
	}
	if err := waitFor(time.Now().Add(replicaSyncTimeout), "replica "+r.Addr()+" in sync with "+master.Addr(),
		func() error { return inSync(master, r) }); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return r
}
