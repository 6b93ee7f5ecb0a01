package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Run(m) }

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestStandaloneSetGet(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	rdb := redistest.Standalone(t)
	key := redistest.QueueName(t)
	if err := rdb.Set(c, key, "hello", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	got, err := rdb.Get(c, key).Result()
	if err != nil || got != "hello" {
		t.Fatalf("GET = %q, %v; want hello", got, err)
	}
	bind, err := rdb.ConfigGet(c, "bind").Result()
	if err != nil || bind["bind"] != "127.0.0.1" {
		t.Fatalf("CONFIG GET bind = %v, %v; want 127.0.0.1", bind, err)
	}
	if !strings.HasPrefix(rdb.Options().Addr, "127.0.0.1:") {
		t.Fatalf("Addr = %q, want a 127.0.0.1 address", rdb.Options().Addr)
	}
}

func TestForEach(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []string
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := ctx(t)
		key := redistest.QueueName(t)
		if err := rdb.RPush(c, key, "a", "b").Err(); err != nil {
			t.Fatalf("RPUSH: %v", err)
		}
		got, err := rdb.LRange(c, key, 0, -1).Result()
		if err != nil || strings.Join(got, ",") != "a,b" {
			t.Fatalf("LRANGE = %v, %v; want [a b]", got, err)
		}
		mu.Lock()
		ran = append(ran, t.Name())
		mu.Unlock()
	})
	want := []string{"TestForEach/standalone", "TestForEach/cluster"}
	if fmt.Sprint(ran) != fmt.Sprint(want) {
		t.Fatalf("ForEach ran %v, want %v", ran, want)
	}
}

func TestClusterHashTags(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	rdb := redistest.ClusterClient(t)
	base := redistest.QueueName(t)

	// Spread keys over hash tags until every master owns one of them.
	owner := map[string]string{} // key -> address of the node holding it
	masters := map[string]bool{}
	for i := 0; i < 64 && len(masters) < 3; i++ {
		key := fmt.Sprintf("{%s-%d}:k", base, i)
		if err := rdb.Set(c, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		node, err := rdb.MasterForKey(c, key)
		if err != nil {
			t.Fatalf("MasterForKey %s: %v", key, err)
		}
		addr := node.Options().Addr
		owner[key] = addr
		masters[addr] = true
	}
	if len(masters) != 3 {
		t.Fatalf("keys landed on %d masters, want 3: %v", len(masters), owner)
	}
	// Check on the nodes themselves, bypassing the routing, that each key
	// lives on the node the cluster client routed it to and nowhere else.
	var mu sync.Mutex
	seen := map[string][]string{}
	err := rdb.ForEachMaster(c, func(c context.Context, node *redis.Client) error {
		for key := range owner {
			n, err := node.Exists(c, key).Result()
			if err != nil {
				var rerr redis.Error
				if errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "MOVED") {
					continue
				}
				return err
			}
			if n == 1 {
				mu.Lock()
				seen[key] = append(seen[key], node.Options().Addr)
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ForEachMaster: %v", err)
	}
	for key, addr := range owner {
		if got := seen[key]; len(got) != 1 || got[0] != addr {
			t.Errorf("key %s found on %v, want only %s", key, got, addr)
		}
	}

	// A script over two keys of one hash tag runs on their node.
	tag := "{" + base + "-script}"
	script := redis.NewScript(`
		redis.call('SET', KEYS[1], ARGV[1])
		redis.call('SET', KEYS[2], ARGV[2])
		return redis.call('MGET', KEYS[1], KEYS[2])`)
	res, err := script.Run(c, rdb, []string{tag + ":a", tag + ":b"}, "one", "two").StringSlice()
	if err != nil || strings.Join(res, ",") != "one,two" {
		t.Fatalf("EVAL over one hash tag = %v, %v; want [one two]", res, err)
	}
	// Keys of two tags on different slots are refused: this is a cluster.
	var other string
	for key := range owner {
		if rdb.ClusterKeySlot(c, key).Val() != rdb.ClusterKeySlot(c, tag+":a").Val() {
			other = key
			break
		}
	}
	err = script.Run(c, rdb, []string{tag + ":a", other}, "x", "y").Err()
	if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("EVAL over two slots: err = %v, want CROSSSLOT", err)
	}
}

func TestStartCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t)
	addrs := cl.Addrs()
	if len(addrs) != 3 {
		t.Fatalf("Addrs = %v, want 3", addrs)
	}
	for _, a := range addrs {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("node address %q is not on 127.0.0.1", a)
		}
	}
	c := ctx(t)
	rdb := cl.Client(t)
	n := 0
	err := rdb.ForEachMaster(c, func(context.Context, *redis.Client) error {
		return nil
	})
	if err != nil {
		t.Fatalf("ForEachMaster: %v", err)
	}
	shards, err := rdb.ClusterShards(c).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	for _, s := range shards {
		for _, r := range s.Slots {
			n += int(r.End-r.Start) + 1
		}
	}
	if len(shards) != 3 || n != 16384 {
		t.Fatalf("%d shards covering %d slots, want 3 covering 16384", len(shards), n)
	}
	if err := cl.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestStartClusterWithReplicas(t *testing.T) {
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t)
	if addrs := cl.Addrs(); len(addrs) != 6 {
		t.Fatalf("Addrs = %v, want 6", addrs)
	}
	c := ctx(t)
	rdb := cl.Client(t)
	shards, err := rdb.ClusterShards(c).Result()
	if err != nil {
		t.Fatalf("CLUSTER SHARDS: %v", err)
	}
	if len(shards) != 3 {
		t.Fatalf("%d shards, want 3", len(shards))
	}
	for _, s := range shards {
		if len(s.Nodes) != 2 {
			t.Fatalf("shard %v has %d nodes, want a master and a replica", s.Slots, len(s.Nodes))
		}
	}
	// A write is on the replica of its master at once.
	if err := rdb.Set(c, "{k}", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	m, err := rdb.MasterForKey(c, "{k}")
	if err != nil {
		t.Fatalf("MasterForKey: %v", err)
	}
	if n, err := m.Wait(c, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 on the key's master = %d, %v; want 1", n, err)
	}
	if cl.Node(cl.Addrs()[5]) == nil || cl.Node("127.0.0.1:1") != nil {
		t.Fatal("Node does not find the nodes by address")
	}
}

func TestStartReplica(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	m := redistest.StartServer(t)
	r := redistest.StartReplica(t, m)
	mc, rc := m.Client(t), r.Client(t)
	if err := mc.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if n, err := mc.Wait(c, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want 1", n, err)
	}
	if v, err := rc.Get(c, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET on the replica = %q, %v", v, err)
	}
}

func TestRestartWithAOFKeepsData(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartServer(t, redistest.WithAOF())
	rdb := s.Client(t)
	addr := s.Addr()
	if err := rdb.Set(c, "k", "kept", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Addr() != addr {
		t.Fatalf("Addr after Restart = %s, want %s", s.Addr(), addr)
	}
	if got, err := rdb.Get(c, "k").Result(); err != nil || got != "kept" {
		t.Fatalf("GET after Restart = %q, %v; want kept", got, err)
	}
	// Killed, not shut down: appendfsync always must still have it.
	if err := rdb.Set(c, "k2", "synced", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart after Kill: %v", err)
	}
	if got, err := rdb.MGet(c, "k", "k2").Result(); err != nil || fmt.Sprint(got) != "[kept synced]" {
		t.Fatalf("MGET after Kill and Restart = %v, %v; want [kept synced]", got, err)
	}
}

func TestStopWithoutPersistenceDropsData(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartServer(t)
	rdb := s.Client(t)
	if err := rdb.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := rdb.Get(c, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Stop and Restart: err = %v, want redis.Nil", err)
	}
}

func TestKillThenRestartRecovers(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartServer(t)
	rdb := s.Client(t)
	if err := rdb.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := s.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	short, cancel := context.WithTimeout(c, 300*time.Millisecond)
	defer cancel()
	if err := rdb.Ping(short).Err(); err == nil {
		t.Fatal("PING succeeded on a killed server")
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if err := rdb.Ping(c).Err(); err != nil {
		t.Fatalf("PING after Restart: %v", err)
	}
	if err := rdb.Get(c, "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after Kill and Restart without AOF: err = %v, want redis.Nil", err)
	}
}

func TestWithArgs(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "12mb", "--maxmemory-policy", "noeviction"))
	rdb := s.Client(t)
	got, err := rdb.ConfigGet(c, "maxmemory").Result()
	if err != nil || got["maxmemory"] != "12582912" {
		t.Fatalf("CONFIG GET maxmemory = %v, %v; want 12582912", got, err)
	}
	save, err := rdb.ConfigGet(c, "save").Result()
	if err != nil || save["save"] != "" {
		t.Fatalf("CONFIG GET save = %v, %v; want empty", save, err)
	}
}

var queueNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)

func TestQueueName(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		n := redistest.QueueName(t)
		if !queueNameRE.MatchString(n) {
			t.Fatalf("QueueName = %q: bad characters or length", n)
		}
		if seen[n] {
			t.Fatalf("QueueName repeated %q", n)
		}
		seen[n] = true
	}
	for _, name := range []string{
		"spaces and/slashes",
		"ünïcode {tag} *?[]:\"'",
		strings.Repeat("long", 60),
	} {
		t.Run(name, func(t *testing.T) {
			n := redistest.QueueName(t)
			if !queueNameRE.MatchString(n) {
				t.Fatalf("QueueName = %q (%d bytes): bad characters or length", n, len(n))
			}
			if !strings.HasPrefix(n, "TestQueueName_") {
				t.Fatalf("QueueName = %q: does not start with the test name", n)
			}
		})
	}
}

func TestMiniredis(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	m, rdb := redistest.Miniredis(t)
	if err := rdb.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if got, err := m.Get("k"); err != nil || got != "v" {
		t.Fatalf("miniredis Get = %q, %v; want v", got, err)
	}
	if !strings.HasPrefix(m.Addr(), "127.0.0.1:") {
		t.Fatalf("miniredis Addr = %q", m.Addr())
	}
}

// fatalTB records the first Fatal call and ends the calling goroutine, as
// testing.T does.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Fatal(args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fatalTB) Skip(...any)          { panic("redistest skipped a test") }
func (f *fatalTB) Skipf(string, ...any) { panic("redistest skipped a test") }
func (f *fatalTB) SkipNow()             { panic("redistest skipped a test") }

func TestMissingBinaryFails(t *testing.T) {
	for _, tc := range []struct {
		env, want string
		start     func(testing.TB)
	}{
		{"REDIS_SERVER", "redis-server not found", func(tb testing.TB) { redistest.StartServer(tb) }},
		{"REDIS_CLI", "redis-cli not found", func(tb testing.TB) { redistest.StartCluster(tb) }},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(tc.env, "/nonexistent/redis-binary")
			f := &fatalTB{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				tc.start(f)
			}()
			<-done
			f.mu.Lock()
			defer f.mu.Unlock()
			if !strings.Contains(f.msg, tc.want) || !strings.Contains(f.msg, tc.env) {
				t.Fatalf("Fatal message = %q, want it to mention %q and %s", f.msg, tc.want, tc.env)
			}
		})
	}
	t.Run("PATH", func(t *testing.T) {
		t.Setenv("REDIS_SERVER", "")
		t.Setenv("PATH", t.TempDir())
		f := &fatalTB{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			redistest.StartServer(f)
		}()
		<-done
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, want := range []string{"redis-server not found", "apt-get install redis-server", "./scripts/test.sh", "REDIS_SERVER"} {
			if !strings.Contains(f.msg, want) {
				t.Fatalf("Fatal message = %q, want it to mention %q", f.msg, want)
			}
		}
	})
}
