package redistest

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Dedicated is a standalone server or a cluster of one test's own, made by
// [ForEachDedicated], for tests that reconfigure the servers (CONFIG SET).
type Dedicated struct {
	// Masters holds a client to each master: the server, or the
	// cluster's three masters.
	Masters []*redis.Client
	client  func() redis.UniversalClient
}

// ForEachDedicated runs f as two subtests of t: "standalone" on a server
// started for it ([StartServer]) and "cluster" on a cluster started for it
// ([StartCluster]).
func ForEachDedicated(t *testing.T, f func(t *testing.T, d *Dedicated)) {
	t.Run("standalone", func(t *testing.T) {
		srv := StartServer(t)
		f(t, &Dedicated{
			Masters: []*redis.Client{srv.Client(t)},
			client:  func() redis.UniversalClient { return srv.Client(t) },
		})
	})
	t.Run("cluster", func(t *testing.T) {
		c := StartCluster(t)
		d := &Dedicated{client: func() redis.UniversalClient { return c.Client(t) }}
		for _, addr := range c.Addrs() {
			m := redis.NewClient(&redis.Options{Addr: addr})
			t.Cleanup(func() { closeClient(t, m) })
			d.Masters = append(d.Masters, m)
		}
		f(t, d)
	})
}

// Client returns a new client to the servers, as another process would
// have: of their topology. It is closed when the test that called
// ForEachDedicated's subtest ends.
func (d *Dedicated) Client() redis.UniversalClient { return d.client() }

// ConfigSetOne sets a configuration parameter on one master: the
// server, or the last of the cluster's three (so that a test sees what a
// setting on any one master does).
func (d *Dedicated) ConfigSetOne(t testing.TB, key, value string) {
	t.Helper()
	ConfigSet(t, d.Masters[len(d.Masters)-1], key, value)
}

// ConfigSet sets a configuration parameter of one server.
func ConfigSet(t testing.TB, rdb *redis.Client, key, value string) {
	t.Helper()
	if err := rdb.ConfigSet(context.Background(), key, value).Err(); err != nil {
		t.Fatalf("redistest: CONFIG SET %s %s on %s: %v", key, value, rdb.Options().Addr, err)
	}
}

// OutOfMemory makes every master refuse writes that need memory, as a
// server at its maxmemory under maxmemory-policy noeviction does: its
// maxmemory is set to half the memory it uses. The settings are undone in
// t.Cleanup.
func (d *Dedicated) OutOfMemory(t testing.TB) {
	t.Helper()
	for _, m := range d.Masters {
		ConfigSet(t, m, "maxmemory-policy", "noeviction")
		ConfigSet(t, m, "maxmemory", strconv.FormatInt(usedMemory(t, m)/2, 10))
		t.Cleanup(func() { ConfigSet(t, m, "maxmemory", "0") })
	}
}

// usedMemory reads used_memory from a server's INFO memory.
func usedMemory(t testing.TB, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		t.Fatalf("redistest: INFO memory: %v", err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	t.Fatalf("redistest: no used_memory in INFO memory")
	return 0
}

// CountCommands counts, from now on, the commands a new client rdb sends
// whose arguments (name first, lower case) match holds for. On a Cluster
// it counts the commands of its node clients, which see every command,
// including those the client sends to each master (ForEachMaster).
func CountCommands(rdb redis.UniversalClient, match func(args []any) bool) *atomic.Int64 {
	h := &commandCounter{match: match}
	if cc, ok := rdb.(*redis.ClusterClient); ok {
		cc.OnNewNode(func(node *redis.Client) { node.AddHook(h) })
	} else {
		rdb.AddHook(h)
	}
	return &h.n
}

// commandCounter is the hook of CountCommands.
type commandCounter struct {
	match func(args []any) bool
	n     atomic.Int64
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.match(cmd.Args()) {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if h.match(cmd.Args()) {
				h.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// IsCommand returns a CountCommands match for the commands called name
// (lower case).
func IsCommand(name string) func(args []any) bool {
	return func(args []any) bool {
		s, _ := args[0].(string)
		return strings.EqualFold(s, name)
	}
}
