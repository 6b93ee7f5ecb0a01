package redistest

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
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

// Cluster is a Redis Cluster of three masters and no replicas on loopback,
// built with `redis-cli --cluster create ... --cluster-yes`.
type Cluster struct {
	nodes []*Server
}

// StartCluster starts a cluster dedicated to the calling test and waits
// until every node reports cluster_state:ok and knows all 16384 slots. It
// is closed in t.Cleanup. StartCluster calls t.Fatal when the cluster
// cannot be built. Most tests should use the shared cluster through
// [ClusterClient] instead.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	start := time.Now()
	c, err := startCluster()
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

// Addrs returns the addresses of the cluster's master nodes,
// "127.0.0.1:port" each.
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
func startCluster() (c *Cluster, err error) {
	cli, err := lookBinary("REDIS_CLI", "redis-cli", "redis-tools")
	if err != nil {
		return nil, err
	}
	c = &Cluster{}
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
	for i := 0; i < clusterMasters; i++ {
		n, err := startServer(cfg, freeClusterPort)
		if err != nil {
			return nil, fmt.Errorf("cluster node %d: %w", i+1, err)
		}
		c.nodes = append(c.nodes, n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterCreateTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
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
			if err := clusterNodeReady(n.Addr()); err != nil {
				notReady = fmt.Errorf("node %s: %w", n.Addr(), err)
				break
			}
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

// clusterNodeReady checks one node's CLUSTER INFO.
func clusterNodeReady(addr string) error {
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
		"cluster_known_nodes":    fmt.Sprint(clusterMasters),
		"cluster_size":           fmt.Sprint(clusterMasters),
	}
	for k, v := range want {
		if fields[k] != v {
			return fmt.Errorf("CLUSTER INFO has %s:%s, want %s", k, fields[k], v)
		}
	}
	return nil
}
