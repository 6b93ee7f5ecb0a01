package store

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// NoEviction is the maxmemory-policy under which Redis never deletes keys
// to make room: a write past maxmemory is refused instead (OutOfMemory).
const NoEviction = "noeviction"

// Evicts reports whether Redis may delete keys under policy to make room:
// any policy but noeviction. An unknown policy ("") does not count.
func Evicts(policy string) bool { return policy != "" && policy != NoEviction }

// EvictionPolicy reads the maxmemory-policy of the deployment with INFO
// memory, which works where CONFIG is disabled: of the server of a
// *redis.Client (the master of a failover client), of every master of a
// *redis.ClusterClient. Masters that differ report the first policy in
// name order that evicts, since a queue's keys may sit on any master. ""
// when INFO has no such field. When the server refuses INFO (see
// InfoRefused), asking again will not help.
func (c *Client) EvictionPolicy(ctx context.Context) (string, error) {
	cc, ok := c.rdb.(*redis.ClusterClient)
	if !ok {
		return policyOf(ctx, c.rdb)
	}
	var (
		mu       sync.Mutex
		policies []string
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		p, err := policyOf(ctx, m)
		mu.Lock()
		policies = append(policies, p)
		mu.Unlock()
		return err
	})
	if err != nil {
		return "", err
	}
	slices.Sort(policies)
	for _, p := range policies {
		if Evicts(p) {
			return p, nil
		}
	}
	if len(policies) == 0 {
		return "", nil
	}
	return policies[len(policies)-1], nil
}

// policyOf reads one server's maxmemory_policy from INFO memory.
func policyOf(ctx context.Context, rdb redis.Cmdable) (string, error) {
	info, err := rdb.Info(ctx, "memory").Result()
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "maxmemory_policy:"); ok {
			return v, nil
		}
	}
	return "", nil
}

// InfoRefused reports whether err is a server's refusal of INFO: an ACL
// that does not allow it (NOPERM: INFO is in @dangerous), or a command
// renamed or disabled, as some managed services do.
func InfoRefused(err error) bool {
	// HasErrorPrefix drops a leading "ERR ".
	return redis.HasErrorPrefix(err, "NOPERM") || redis.HasErrorPrefix(err, "unknown command")
}

// OutOfMemory reports whether err is Redis's refusal of a write past its
// maxmemory under noeviction: "OOM command not allowed when used memory >
// 'maxmemory'". A script so refused wrote nothing: Redis refuses only the
// first write of a script (once a script has written, its later writes
// are allowed, so that it is never cut halfway).
func OutOfMemory(err error) bool { return redis.HasErrorPrefix(err, "OOM") }

// ServerInfo is what INFO says of the deployment: of the server of a
// *redis.Client, summed over the masters of a *redis.ClusterClient.
type ServerInfo struct {
	Addr       string // the address the client was given (the first of a Cluster's)
	Version    string // redis_version (the lowest of the masters')
	Mode       string // redis_mode: standalone or cluster
	Masters    int
	UsedMemory int64 // used_memory, bytes
	MaxMemory  int64 // maxmemory, bytes; 0: no limit
	Clients    int64 // connected_clients
	Eviction   string
}

// olderVersion reports whether the dotted version a (of INFO's
// redis_version, as "7.2.4") is older than b, comparing each part as a
// number: 7.10.0 is newer than 7.2.4. A part that is not a number counts
// as 0.
func olderVersion(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// Info reads ServerInfo with INFO (one round trip per master).
func (c *Client) Info(ctx context.Context) (ServerInfo, error) {
	var out ServerInfo
	var mu sync.Mutex
	add := func(ctx context.Context, rdb redis.Cmdable) error {
		info, err := rdb.Info(ctx, "server", "memory", "clients").Result()
		if err != nil {
			return err
		}
		f := map[string]string{}
		for line := range strings.SplitSeq(info, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
				f[k] = v
			}
		}
		num := func(k string) int64 { n, _ := strconv.ParseInt(f[k], 10, 64); return n }
		mu.Lock()
		defer mu.Unlock()
		out.Masters++
		if out.Version == "" || olderVersion(f["redis_version"], out.Version) {
			out.Version = f["redis_version"]
		}
		out.Mode = f["redis_mode"]
		out.UsedMemory += num("used_memory")
		out.MaxMemory += num("maxmemory")
		out.Clients += num("connected_clients")
		if out.Eviction == "" || Evicts(f["maxmemory_policy"]) {
			out.Eviction = f["maxmemory_policy"]
		}
		return nil
	}
	var err error
	switch r := c.rdb.(type) {
	case *redis.ClusterClient:
		if addrs := r.Options().Addrs; len(addrs) > 0 {
			out.Addr = addrs[0]
		}
		err = r.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return add(ctx, m) })
	case *redis.Client:
		out.Addr = r.Options().Addr
		err = add(ctx, r)
	default:
		err = add(ctx, c.rdb)
	}
	return out, err
}
