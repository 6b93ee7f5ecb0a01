package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/redistest"
)

// eventually calls f until it returns nil, and fails the test with f's last
// error when that has not happened within timeout.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done after %v: %v", what, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sentinelClient returns a client to one sentinel, closed in t.Cleanup.
func sentinelClient(t *testing.T, addr string) *redis.SentinelClient {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	t.Cleanup(func() {
		if err := sc.Close(); err != nil && !errors.Is(err, redis.ErrClosed) {
			t.Errorf("closing sentinel client: %v", err)
		}
	})
	return sc
}

// role returns the first element of ROLE: "master" or "slave".
func role(c context.Context, rdb *redis.Client) (string, error) {
	r, err := rdb.Do(c, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(r) == 0 {
		return "", errors.New("empty ROLE reply")
	}
	return fmt.Sprint(r[0]), nil
}

// port returns the port of the server rdb's connection reaches.
func port(c context.Context, rdb *redis.Client) (string, error) {
	m, err := rdb.ConfigGet(c, "port").Result()
	if err != nil {
		return "", err
	}
	return m["port"], nil
}

func TestStartSentinel(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartSentinel(t)

	addrs := s.SentinelAddrs()
	if len(addrs) != 3 {
		t.Fatalf("SentinelAddrs = %v, want 3", addrs)
	}
	master, replica := s.Master(), s.Replica()
	if master == replica || master.Addr() == replica.Addr() {
		t.Fatalf("Master and Replica are the same server %s", master.Addr())
	}
	for _, a := range append([]string{master.Addr(), replica.Addr()}, addrs...) {
		if !strings.HasPrefix(a, "127.0.0.1:") {
			t.Fatalf("address %q is not on 127.0.0.1", a)
		}
	}
	if r, err := role(c, master.Client(t)); err != nil || r != "master" {
		t.Fatalf("Master ROLE = %q, %v; want master", r, err)
	}
	if r, err := role(c, replica.Client(t)); err != nil || r != "slave" {
		t.Fatalf("Replica ROLE = %q, %v; want slave", r, err)
	}

	for _, a := range addrs {
		sc := sentinelClient(t, a)
		got, err := sc.GetMasterAddrByName(c, redistest.MasterName).Result()
		if err != nil || strings.Join(got, ":") != master.Addr() {
			t.Fatalf("sentinel %s: GET-MASTER-ADDR-BY-NAME = %v, %v; want %s", a, got, err, master.Addr())
		}
		replicas, err := sc.Replicas(c, redistest.MasterName).Result()
		if err != nil || len(replicas) != 1 || replicas[0]["ip"]+":"+replicas[0]["port"] != replica.Addr() {
			t.Fatalf("sentinel %s: REPLICAS = %v, %v; want %s", a, replicas, err, replica.Addr())
		}
		others, err := sc.Sentinels(c, redistest.MasterName).Result()
		if err != nil || len(others) != 2 {
			t.Fatalf("sentinel %s: SENTINELS = %v, %v; want the 2 others", a, others, err)
		}
		for _, o := range others {
			oa := o["ip"] + ":" + o["port"]
			if oa == a || !strings.Contains(strings.Join(addrs, " "), oa) {
				t.Fatalf("sentinel %s knows sentinel %s, want one of the others of %v", a, oa, addrs)
			}
		}
	}

	rdb := s.Client(t)
	if err := rdb.Ping(c).Err(); err != nil {
		t.Fatalf("PING through the failover client: %v", err)
	}
	if p, err := port(c, rdb); err != nil || "127.0.0.1:"+p != master.Addr() {
		t.Fatalf("failover client reaches port %q, %v; want the master %s", p, err, master.Addr())
	}
	opted := s.Client(t, func(o *redis.FailoverOptions) { o.DB = 1 })
	if got := opted.Options().DB; got != 1 {
		t.Fatalf("client option DB = %d, want 1 as set by the option function", got)
	}
}

func TestSentinelWriteReachesReplica(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartSentinel(t)
	rdb := s.Client(t)
	replica := s.Replica().Client(t)

	if err := rdb.Set(c, "k", "v", 0).Err(); err != nil {
		t.Fatalf("SET through the failover client: %v", err)
	}
	eventually(t, 10*time.Second, "write visible on the replica", func() error {
		got, err := replica.Get(c, "k").Result()
		if err != nil {
			return err
		}
		if got != "v" {
			return fmt.Errorf("GET on the replica = %q, want v", got)
		}
		return nil
	})
	if err := replica.Set(c, "k", "w", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "READONLY") {
		t.Fatalf("SET on the replica: err = %v, want READONLY", err)
	}
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartSentinel(t)
	rdb := s.Client(t)
	first, second := s.Master(), s.Replica()

	if err := rdb.Set(c, "before", "1", 0).Err(); err != nil {
		t.Fatalf("SET before the failover: %v", err)
	}
	// The replica must have it, or the failover may drop it.
	if n, err := rdb.Wait(c, 1, 10000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want 1", n, err)
	}

	// Fail over, then back, checking the client each time.
	for i, step := range []struct{ from, want *redistest.Server }{{first, second}, {second, first}} {
		from, want := step.from, step.want
		addr := s.Failover(t)
		if addr != want.Addr() {
			t.Fatalf("failover %d: Failover = %s, want %s", i+1, addr, want.Addr())
		}
		if s.Master() != want || s.Replica() != from {
			t.Fatalf("failover %d: Master, Replica = %s, %s; want %s, %s",
				i+1, s.Master().Addr(), s.Replica().Addr(), want.Addr(), from.Addr())
		}
		if r, err := role(c, want.Client(t)); err != nil || r != "master" {
			t.Fatalf("failover %d: new master ROLE = %q, %v; want master", i+1, r, err)
		}
		if r, err := role(c, from.Client(t)); err != nil || r != "slave" {
			t.Fatalf("failover %d: former master ROLE = %q, %v; want slave", i+1, r, err)
		}

		// The client may first hit the former master, now read-only, or a
		// connection closed by the switch.
		key := "after-" + strconv.Itoa(i+1)
		eventually(t, 10*time.Second, "write through the failover client after the failover", func() error {
			return rdb.Set(c, key, "1", 0).Err()
		})
		eventually(t, 10*time.Second, "failover client following the new master", func() error {
			p, err := port(c, rdb)
			if err != nil {
				return err
			}
			if "127.0.0.1:"+p != want.Addr() {
				return fmt.Errorf("client reaches port %s, want %s", p, want.Addr())
			}
			return nil
		})
		direct := want.Client(t)
		got, err := direct.MGet(c, "before", key).Result()
		if err != nil || fmt.Sprint(got) != "[1 1]" {
			t.Fatalf("failover %d: MGET on the new master = %v, %v; want [1 1]", i+1, got, err)
		}
		if n, err := rdb.Wait(c, 1, 10000).Result(); err != nil || n != 1 {
			t.Fatalf("failover %d: WAIT 1 on the new master = %d, %v; want 1 (the former master replicating)", i+1, n, err)
		}
		fresh := s.Client(t)
		if p, err := port(c, fresh); err != nil || "127.0.0.1:"+p != want.Addr() {
			t.Fatalf("failover %d: a new failover client reaches port %q, %v; want %s", i+1, p, err, want.Addr())
		}
	}
}

func TestSentinelKilledMasterFailsOver(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	s := redistest.StartSentinel(t)
	rdb := s.Client(t)
	old, replica := s.Master(), s.Replica()
	if err := rdb.Set(c, "before", "1", 0).Err(); err != nil {
		t.Fatalf("SET before the kill: %v", err)
	}
	if n, err := rdb.Wait(c, 1, 10000).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 = %d, %v; want 1", n, err)
	}
	if err := old.Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	start := time.Now()
	// Sentinels that split their votes wait before electing again, so
	// leave room for a second election.
	eventually(t, 25*time.Second, "sentinels promoting the replica", func() error {
		if m := s.Master(); m != replica {
			return fmt.Errorf("Master = %s, want %s", m.Addr(), replica.Addr())
		}
		return nil
	})
	t.Logf("sentinels promoted %s %v after the kill", replica.Addr(), time.Since(start).Round(time.Millisecond))
	eventually(t, 10*time.Second, "write through the failover client after the failover", func() error {
		return rdb.Set(c, "after", "1", 0).Err()
	})
	got, err := replica.Client(t).MGet(c, "before", "after").Result()
	if err != nil || fmt.Sprint(got) != "[1 1]" {
		t.Fatalf("MGET on the new master = %v, %v; want [1 1]", got, err)
	}
}

func TestStartSentinelMissingBinaryFails(t *testing.T) {
	t.Setenv("REDIS_SERVER", "/nonexistent/redis-binary")
	f := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		redistest.StartSentinel(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	if !strings.Contains(f.msg, "redis-server not found") || !strings.Contains(f.msg, "REDIS_SERVER") {
		t.Fatalf("Fatal message = %q, want it to mention redis-server not found and REDIS_SERVER", f.msg)
	}
}
