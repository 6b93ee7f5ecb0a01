package redistest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.uber.org/goleak"

	"github.com/redelay/redelay/internal/keys"
)

// shared holds the servers shared by all tests of the test binary. Each is
// started on first use and stopped by Run.
var shared struct {
	standaloneOnce sync.Once
	clusterOnce    sync.Once

	mu            sync.Mutex
	standalone    *Server
	standaloneErr error
	cluster       *Cluster
	clusterErr    error
}

// sharedServer returns the shared standalone server, starting it on first
// use.
func sharedServer(t testing.TB) *Server {
	t.Helper()
	shared.standaloneOnce.Do(func() {
		start := time.Now()
		s, err := startServer(serverConfig{}, freePort)
		shared.mu.Lock()
		shared.standalone, shared.standaloneErr = s, err
		shared.mu.Unlock()
		if err == nil {
			t.Logf("redistest: shared redis-server %s ready in %v", s.Addr(), time.Since(start).Round(time.Millisecond))
		}
	})
	shared.mu.Lock()
	s, err := shared.standalone, shared.standaloneErr
	shared.mu.Unlock()
	if err != nil {
		t.Fatalf("redistest: shared standalone server: %v", err)
	}
	return s
}

// sharedCluster returns the shared cluster, starting it on first use.
func sharedCluster(t testing.TB) *Cluster {
	t.Helper()
	shared.clusterOnce.Do(func() {
		start := time.Now()
		c, err := startCluster(0)
		shared.mu.Lock()
		shared.cluster, shared.clusterErr = c, err
		shared.mu.Unlock()
		if err == nil {
			t.Logf("redistest: shared cluster %v ready in %v", c.Addrs(), time.Since(start).Round(time.Millisecond))
		}
	})
	shared.mu.Lock()
	c, err := shared.cluster, shared.clusterErr
	shared.mu.Unlock()
	if err != nil {
		t.Fatalf("redistest: shared cluster: %v", err)
	}
	return c
}

// stopShared stops the shared servers that were started.
func stopShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	var errs []error
	if shared.standalone != nil {
		errs = append(errs, shared.standalone.close())
	}
	if shared.cluster != nil {
		errs = append(errs, shared.cluster.Close())
	}
	return errors.Join(errs...)
}

// Standalone returns a new client to the standalone redis-server shared by
// the tests of this test binary, starting the server on first use. The
// client is closed in t.Cleanup. Tests share its data, so each must use
// keys of its own (see [QueueName]) and must not flush or reconfigure it.
func Standalone(t testing.TB) *redis.Client {
	t.Helper()
	return sharedServer(t).Client(t)
}

// ClusterClient returns a new client to the three-master cluster shared by
// the tests of this test binary, starting the cluster on first use. The
// client is closed in t.Cleanup. Tests share its data, so each must use
// keys of its own (see [QueueName]) and must not flush or reconfigure it.
func ClusterClient(t testing.TB) *redis.ClusterClient {
	t.Helper()
	return sharedCluster(t).Client(t)
}

// ForEach runs f as two subtests of t: "standalone" with a client to the
// shared standalone server and "cluster" with a client to the shared
// cluster. ForEach does not call t.Parallel; f may.
func ForEach(t *testing.T, f func(t *testing.T, rdb redis.UniversalClient)) {
	t.Helper()
	t.Run("standalone", func(t *testing.T) {
		f(t, Standalone(t))
	})
	t.Run("cluster", func(t *testing.T) {
		f(t, ClusterClient(t))
	})
}

// maxQueueName is the longest name QueueName returns, in bytes.
const maxQueueName = 100

// queueSeq numbers the names made by QueueName.
var queueSeq atomic.Uint64

// QueueName returns a name unique to this test and call, usable as a queue
// name: it is made of t.Name() with every character other than an ASCII
// letter, digit, '-', '_' or '.' replaced by '_', followed by a counter and
// a short random suffix, and is at most 100 bytes long.
func QueueName(t testing.TB) string {
	suffix := "-" + strconv.FormatUint(queueSeq.Add(1), 36) + "-" + fmt.Sprintf("%06x", rand.Uint32()&0xffffff)
	var b strings.Builder
	for _, r := range t.Name() {
		if r < 0x80 && validQueueByte(byte(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" {
		base = "q"
	}
	if max := maxQueueName - len(suffix); len(base) > max {
		base = base[:max]
	}
	return base + suffix
}

// validQueueByte reports whether c may appear in a name made by QueueName.
func validQueueByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.'
}

// Miniredis starts an embedded miniredis on a loopback port for fast unit
// tests and returns it with a client connected to it. Both are closed in
// t.Cleanup. Miniredis only approximates Redis: behaviour that matters
// belongs in tests against a real server.
func Miniredis(t testing.TB) (*miniredis.Miniredis, *redis.Client) {
	t.Helper()
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		t.Fatalf("redistest: starting miniredis: %v", err)
	}
	t.Cleanup(m.Close)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { closeClient(t, rdb) })
	return m, rdb
}

// Run is the body of a TestMain: it runs the tests, stops the shared
// servers, then looks for leaked goroutines. Leaks, and errors stopping
// the servers, are printed to standard error and make the test binary exit
// with status 1; otherwise it exits with the status of the tests.
//
//	func TestMain(m *testing.M) { redistest.Run(m) }
//
// The default slog logger is set to errors only: the library logs expected
// warnings (dead letters, reclaims) that would drown test output.
func Run(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "redistest: stopping shared servers: %v\n", err)
		code = 1
	}
	if err := goleak.Find(); err != nil {
		fmt.Fprintf(os.Stderr, "redistest: goroutines leaked by the tests (close every client, server and background worker):\n%v\n", err)
		code = 1
	}
	os.Exit(code)
}

// NewClientLike returns a new client of rdb's topology with rdb's options
// (one more "process" talking to the same servers), closed in t.Cleanup.
func NewClientLike(t testing.TB, rdb redis.UniversalClient) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch x := rdb.(type) {
	case *redis.Client:
		o := *x.Options()
		// The copy would share the live client's maintenance-notification
		// settings, which go-redis writes while it runs (a data race, and
		// a handler registered twice): the new client gets its own.
		o.MaintNotificationsConfig = noMaintNotifications()
		c = redis.NewClient(&o)
	case *redis.ClusterClient:
		o := *x.Options()
		o.MaintNotificationsConfig = noMaintNotifications()
		c = redis.NewClusterClient(&o)
	default:
		t.Fatalf("redistest: NewClientLike(%T): unsupported client type", rdb)
	}
	t.Cleanup(func() { closeClient(t, c) })
	return c
}

// noMaintNotifications turns off go-redis's cluster maintenance
// notifications (a Redis Enterprise feature): the servers the tests start
// do not have it, and each client would otherwise ask and log.
func noMaintNotifications() *maintnotifications.Config {
	return &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// KeysOf returns the Redis key names of the queue called name, for tests
// that look at a queue's keys directly. It panics on an invalid name.
func KeysOf(name string) keys.Set {
	k, err := keys.New(name)
	if err != nil {
		panic(err)
	}
	return k
}

// Unregister removes names from the registry of queues when t ends, for
// tests whose queues would change what a later test that reads the whole
// registry sees (the dashboard's overview, run again by go test -count=2).
// Call it before opening the queues: cleanups run last in, first out, and
// an open queue may announce itself again.
func Unregister(t testing.TB, rdb redis.UniversalClient, names ...string) {
	t.Helper()
	members := make([]any, len(names))
	for i, n := range names {
		members[i] = n
	}
	t.Cleanup(func() {
		if err := rdb.ZRem(context.Background(), keys.Registry, members...).Err(); err != nil {
			t.Errorf("redistest: removing %q from the registry: %v", names, err)
		}
	})
}

// WaitFor polls cond every 5 ms until it holds, and fails the test when
// within passes first, naming what it waited for.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Prefix returns a key prefix of this test's own (blocking.WithPrefix),
// whose registries of queues and of consumers are deleted when t ends.
func Prefix(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	p := fmt.Sprintf("t%08x", rand.Uint32())
	t.Cleanup(func() { rdb.Del(context.Background(), keys.RegistryOf(p), keys.ConsumersOf(p)) })
	return p
}
