package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
)

const (
	// clusterMasters is the number of master nodes in a cluster.
	clusterMasters = 3
	// clusterSlots is the number of hash slots of a Redis Cluster.
	clusterSlots = 16384
	// clusterCreateTimeout bounds redis-cli --cluster create.
	clusterCreateTimeout = 60 * time.Second
	// clusterReadyTimeout bounds the wait for every node to report a
	// healthy cluster after creation.
	clusterReadyTimeout = 20 * time.Second
)

// Cluster is a Redis Cluster of three masters on loopback, with no
// replicas ([StartCluster]) or one replica per master
// ([StartClusterWithReplicas]), built with `redis-cli --cluster create ...
// --cluster-yes`.
type Cluster struct {
	nodes    []*Server
	replicas int // per master
}

// StartCluster starts a cluster dedicated to the calling test and waits
// until every node reports cluster_state:ok and knows all 16384 slots. It
// is closed in t.Cleanup. StartCluster calls t.Fatal when the cluster
// cannot be built. Most tests should use the shared cluster through
// [ClusterClient] instead.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startClusterFor(t, 0)
}

// StartClusterWithReplicas starts a cluster of three masters, each with
// one replica (six nodes), dedicated to the calling test, and waits until
// every node reports cluster_state:ok and knows all 16384 slots and six
// nodes, and every replica is in sync with its master. It is closed in
// t.Cleanup, and calls t.Fatal when the cluster cannot be built. For tests
// of replica acknowledgement (WAIT) and of failovers: CLUSTER FAILOVER
// sent to a replica makes it its master's master.
func StartClusterWithReplicas(t testing.TB) *Cluster {
	t.Helper()
	return startClusterFor(t, 1)
}

func startClusterFor(t testing.TB, replicas int) *Cluster {
	t.Helper()
	start := time.Now()
	c, err := startCluster(replicas)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("redistest: %v", err)
		}
	})
	t.Logf("redistest: cluster %v ready in %v", c.Addrs(), time.Since(start).Round(time.Millisecond))
	return c
}

// Addrs returns the addresses of the cluster's nodes, "127.0.0.1:port"
// each: the three masters it was created with, then their replicas, if
// any (roles change with failovers; ask the nodes for them).
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Client returns a new cluster client seeded with every node's address.
// It is closed in t.Cleanup.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { closeClient(t, rdb) })
	return rdb
}

// Node returns the node listening on addr, one of [Cluster.Addrs], or
// nil.
func (c *Cluster) Node(addr string) *Server {
	for _, n := range c.nodes {
		if n.Addr() == addr {
			return n
		}
	}
	return nil
}

// Close kills every node and removes their data directories.
func (c *Cluster) Close() error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.close())
	}
	return errors.Join(errs...)
}

// startCluster starts the nodes, joins them into a cluster and waits
// until it is healthy.
func startCluster(replicas int) (c *Cluster, err error) {
	cli, err := lookBinary("REDIS_CLI", "redis-cli", "redis-tools")
	if err != nil {
		return nil, err
	}
	c = &Cluster{replicas: replicas}
	started := c // c is nil by the time a failed return runs the cleanup
	defer func() {
		if err != nil {
			_ = started.Close()
		}
	}()
	cfg := serverConfig{args: []string{
		"--cluster-enabled", "yes",
		"--cluster-config-file", "nodes.conf",
		"--cluster-node-timeout", "5000",
	}}
	for i := 0; i < clusterMasters*(1+replicas); i++ {
		n, err := startServer(cfg, freeClusterPort)
		if err != nil {
			return nil, fmt.Errorf("cluster node %d: %w", i+1, err)
		}
		c.nodes = append(c.nodes, n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %v\n%s", cli, strings.Join(args, " "), err, out)
	}
	if err := c.waitReady(clusterReadyTimeout); err != nil {
		return nil, err
	}
	return c, nil
}

// waitReady polls CLUSTER INFO on every node until each reports a healthy
// cluster that knows every node and every slot.
func (c *Cluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var notReady error
		for _, n := range c.nodes {
			if err := clusterNodeReady(n.Addr(), len(c.nodes)); err != nil {
				notReady = fmt.Errorf("node %s: %w", n.Addr(), err)
				break
			}
		}
		if notReady == nil && c.replicas > 0 {
			notReady = c.replicasInSync()
		}
		if notReady == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster %v not ready after %v: %w", c.Addrs(), timeout, notReady)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// replicasInSync checks that every node that is a replica has its link to
// its master up and its first sync done.
func (c *Cluster) replicasInSync() error {
	n := 0
	for _, node := range c.nodes {
		r, err := info(node.Addr(), "replication")
		if err != nil {
			return fmt.Errorf("node %s: %w", node.Addr(), err)
		}
		if r["role"] != "slave" {
			continue
		}
		if r["master_link_status"] != "up" || r["master_sync_in_progress"] != "0" {
			return fmt.Errorf("replica %s: master_link_status:%s master_sync_in_progress:%s",
				node.Addr(), r["master_link_status"], r["master_sync_in_progress"])
		}
		n++
	}
	if want := clusterMasters * c.replicas; n != want {
		return fmt.Errorf("%d replicas, want %d", n, want)
	}
	return nil
}

// clusterNodeReady checks one node's CLUSTER INFO, in a cluster of nodes
// nodes.
func clusterNodeReady(addr string, nodes int) error {
	info, err := command(addr, time.Second, "CLUSTER", "INFO")
	if err != nil {
		return err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	want := map[string]string{
		"cluster_state":          "ok",
		"cluster_slots_assigned": fmt.Sprint(clusterSlots),
		"cluster_slots_ok":       fmt.Sprint(clusterSlots),
		"cluster_known_nodes":    fmt.Sprint(nodes),
		"cluster_size":           fmt.Sprint(clusterMasters),
	}
	for k, v := range want {
		if fields[k] != v {
			return fmt.Errorf("CLUSTER INFO has %s:%s, want %s", k, fields[k], v)
		}
	}
	return nil
}

// MasterOf returns, for each of the n partitions of the queue called name,
// the address of the cluster master that holds its keys.
func MasterOf(t testing.TB, rdb *redis.ClusterClient, name string, n int) []string {
	t.Helper()
	ctx := context.Background()
	slots, err := rdb.ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, n)
	for i := range n {
		slot, err := rdb.ClusterKeySlot(ctx, KeysOf(name).Partition(i).Ready).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range slots {
			if int64(s.Start) <= slot && slot <= int64(s.End) {
				out[i] = s.Nodes[0].Addr
			}
		}
	}
	return out
}

// SpreadName returns a queue name whose n partitions land on every master
// of the cluster, at least min on each: the slot of a tag is a hash, so
// with 8 partitions on 3 masters a name picked at random leaves a master
// without any 12 % of the time (the README's advice: n several times the
// number of masters).
func SpreadName(t testing.TB, rdb *redis.ClusterClient, n, min int) string {
	t.Helper()
	for range 200 {
		name := QueueName(t)
		per := map[string]int{}
		for _, m := range MasterOf(t, rdb, name, n) {
			per[m]++
		}
		ok := len(per) == clusterMasters
		for _, c := range per {
			ok = ok && c >= min
		}
		if ok {
			return name
		}
	}
	t.Fatal("no name spreads its partitions over every master")
	return ""
}

// IDIn returns an item ID that lives in partition p of a queue of n
// partitions.
func IDIn(p, n int) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("p%d-%d", p, i)
		if keys.PartitionOf(id, n) == p {
			return id
		}
	}
}
