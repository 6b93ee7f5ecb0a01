package redistest

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name under which the sentinels started by
// [StartSentinel] monitor their master: the MasterName of the
// redis.FailoverOptions of a client to them. [Sentinel.Client] sets it.
const MasterName = "redelay-test"

const (
	// sentinelCount is the number of sentinels of a Sentinel.
	sentinelCount = 3
	// sentinelQuorum is how many sentinels must agree that the master is
	// down before one of them fails it over on its own.
	sentinelQuorum = 2
	// sentinelDownAfter is the sentinels' down-after-milliseconds: how long
	// the master may go unanswered before a sentinel deems it down.
	sentinelDownAfter = 1000
	// sentinelFailoverTimeout is the sentinels' failover-timeout in
	// milliseconds, which bounds each step of a failover.
	sentinelFailoverTimeout = 5000
	// sentinelPublishPeriod is how often, in milliseconds, a sentinel
	// announces itself and its view of the master (default 2000). A
	// sentinel also waits four periods before it makes a replica of a
	// stale master that came back.
	sentinelPublishPeriod = 250
	// sentinelSyncTimeout bounds the wait for the replica's first sync.
	sentinelSyncTimeout = 20 * time.Second
	// sentinelReadyTimeout bounds the wait for the sentinels to discover
	// the replica and each other, through the master's INFO and their
	// hello messages.
	sentinelReadyTimeout = 30 * time.Second
	// failoverWait bounds Failover, from SENTINEL FAILOVER to the former
	// master being in sync as a replica of the new one.
	failoverWait = 30 * time.Second
	// sentinelPoll is the pause between two checks of a condition.
	sentinelPoll = 50 * time.Millisecond
)

// Sentinel is a Redis Sentinel deployment on loopback: a master, one
// replica of it, and three sentinels that monitor the master under the
// name [MasterName] with a quorum of two. Each process is a [Server] with a
// data directory of its own. Its methods are safe for concurrent use.
//
// The sentinels deem the master down after one second without an answer
// (down-after-milliseconds 1000) and bound each step of a failover to five
// seconds (failover-timeout 5000), so killing the master triggers a real
// failover within a few seconds; [Sentinel.Failover] forces one at once.
// They announce themselves every 250 ms rather than every two seconds (set
// with SENTINEL DEBUG, which a sentinel older than Redis 7.0 ignores), so
// they find each other and spread a new master's address sooner.
//
// The data servers keep nothing on disk: a master killed and restarted
// with [Server.Restart] comes back empty.
type Sentinel struct {
	data      [2]*Server // the master and the replica, in start order
	sentinels []*Server

	mu     sync.Mutex
	master int // index in data of the master the sentinels last reported
}

// StartSentinel starts a master, a replica of it, and three sentinels that
// monitor the master under the name [MasterName], and waits until the
// replica is in sync and every sentinel knows the master, the replica and
// the two other sentinels. The deployment is dedicated to the calling test:
// every process is killed and its data directory removed in t.Cleanup.
// StartSentinel calls t.Fatal when it cannot be started, including when
// redis-server is not installed.
//
// A sentinel runs as `redis-server <its config file> --sentinel`, so the
// REDIS_SERVER binary serves for all five processes.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	start := time.Now()
	s, err := startSentinel()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if err := s.close(); err != nil {
			t.Errorf("redistest: %v", err)
		}
	})
	t.Logf("redistest: sentinel deployment (master %s, replica %s, sentinels %v) ready in %v",
		s.data[0].Addr(), s.data[1].Addr(), s.SentinelAddrs(), time.Since(start).Round(time.Millisecond))
	return s
}

// SentinelAddrs returns the addresses of the three sentinels,
// "127.0.0.1:port" each: the SentinelAddrs of a redis.FailoverOptions.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, n := range s.sentinels {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Master returns the server that is the master now: the one the first
// sentinel that answers reports, or, when none answers, the one reported
// last. It changes after a failover, forced by [Sentinel.Failover] or not.
// Sentinels learn of a failover one after the other, so during one the
// answer may still be the former master.
func (s *Sentinel) Master() *Server {
	return s.data[s.masterIndex()]
}

// Replica returns the server that is not [Sentinel.Master]: the replica
// now. It changes after a failover.
func (s *Sentinel) Replica() *Server {
	return s.data[1-s.masterIndex()]
}

// Client returns a new client made by redis.NewFailoverClient, which asks
// the sentinels for the master and follows failovers. Its options name
// [MasterName] and the sentinels' addresses; each opts function may change
// them before the client is made. The client is closed in t.Cleanup.
func (s *Sentinel) Client(t testing.TB, opts ...func(*redis.FailoverOptions)) *redis.Client {
	t.Helper()
	o := &redis.FailoverOptions{
		MasterName:    MasterName,
		SentinelAddrs: s.SentinelAddrs(),
	}
	for _, f := range opts {
		f(o)
	}
	rdb := redis.NewFailoverClient(o)
	t.Cleanup(func() { closeClient(t, rdb) })
	return rdb
}

// Failover makes the replica the master with SENTINEL FAILOVER and waits
// until every sentinel reports it as the master (the address a failover
// client asks them for), it answers role:master, and the former master,
// unless the test stopped or killed it, answers role:slave and is in sync
// with it. It returns the new master's address, which [Sentinel.Master]
// returns from then on. Failover calls t.Fatal when that does not happen
// within 30 seconds.
//
// A forced failover leaves the former master running as a master; the
// sentinels make it a replica only after it has gone on claiming to be one
// for a while. Failover does so itself at once, with REPLICAOF, so that
// [Sentinel.Replica] is a replica when Failover returns and a second
// Failover can fail back. Writes that reached the former master between
// the promotion and its demotion are lost, as in a real failover.
func (s *Sentinel) Failover(t testing.TB) string {
	t.Helper()
	start := time.Now()
	addr, err := s.failover()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Logf("redistest: sentinel failover to %s done in %v", addr, time.Since(start).Round(time.Millisecond))
	return addr
}

// startSentinel starts the deployment and waits until it is ready.
func startSentinel() (*Sentinel, error) {
	s := &Sentinel{}
	ok := false
	defer func() {
		if !ok {
			_ = s.close()
		}
	}()
	// Both data servers are started alike, since either may become the
	// master: the replica is made one with REPLICAOF rather than
	// --replicaof, which Server.Restart would apply again whatever its
	// role by then. With no delay (the default is five seconds), a full
	// sync starts as soon as a replica asks for it.
	cfg := serverConfig{args: []string{"--repl-diskless-sync-delay", "0"}}
	for i, role := range []string{"master", "replica"} {
		n, err := startServer(cfg, freePort)
		if err != nil {
			return nil, fmt.Errorf("sentinel deployment %s: %w", role, err)
		}
		s.data[i] = n
	}
	master, replica := s.data[0], s.data[1]
	if _, err := command(replica.Addr(), time.Second, "REPLICAOF", "127.0.0.1", strconv.Itoa(master.port)); err != nil {
		return nil, fmt.Errorf("sentinel deployment replica %s: REPLICAOF %s: %w", replica.Addr(), master.Addr(), err)
	}
	// The sentinels learn of the replica from the master's INFO, which
	// they ask for at once and then only every ten seconds: start them
	// after the replica is attached.
	if err := waitFor(time.Now().Add(sentinelSyncTimeout), "replica "+replica.Addr()+" in sync with "+master.Addr(),
		func() error { return inSync(master, replica) }); err != nil {
		return nil, err
	}
	conf := sentinelConf(master.port)
	for i := 0; i < sentinelCount; i++ {
		n, err := startServer(serverConfig{conf: conf, args: []string{"--sentinel"}}, freePort)
		if err != nil {
			return nil, fmt.Errorf("sentinel %d: %w", i+1, err)
		}
		s.sentinels = append(s.sentinels, n)
		// Sentinels find each other through the hello messages they
		// publish every two seconds; more often, the deployment is ready
		// sooner. SENTINEL DEBUG came with Redis 7.0: an older sentinel
		// refuses it and keeps the default, which is slower but works.
		_, _ = command(n.Addr(), time.Second, "SENTINEL", "DEBUG", "publish-period", strconv.Itoa(sentinelPublishPeriod))
	}
	if err := waitFor(time.Now().Add(sentinelReadyTimeout), "sentinels knowing the master, the replica and each other",
		func() error { return s.sentinelsAgree(master) }); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, s.sentinelLogs())
	}
	ok = true
	return s, nil
}

// sentinelConf returns a sentinel's configuration file, which the sentinel
// rewrites to record what it learns.
func sentinelConf(masterPort int) string {
	return fmt.Sprintf(`sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d
sentinel down-after-milliseconds %[1]s %[4]d
sentinel failover-timeout %[1]s %[5]d
sentinel parallel-syncs %[1]s 1
sentinel resolve-hostnames no
sentinel announce-hostnames no
sentinel announce-ip 127.0.0.1
`, MasterName, masterPort, sentinelQuorum, sentinelDownAfter, sentinelFailoverTimeout)
}

// close kills every process, the sentinels first, and removes their data
// directories.
func (s *Sentinel) close() error {
	var errs []error
	for _, n := range s.sentinels {
		errs = append(errs, n.close())
	}
	for _, n := range s.data {
		if n != nil {
			errs = append(errs, n.close())
		}
	}
	return errors.Join(errs...)
}

// masterIndex returns the index in s.data of the master the sentinels
// report, or of the one they reported last when none answers.
func (s *Sentinel) masterIndex() int {
	if addr, err := s.reportedMaster(); err == nil {
		for i, n := range s.data {
			if n.Addr() == addr {
				s.mu.Lock()
				s.master = i
				s.mu.Unlock()
				return i
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.master
}

// reportedMaster returns the master's address as the first sentinel that
// answers reports it.
func (s *Sentinel) reportedMaster() (string, error) {
	var errs []error
	for _, n := range s.sentinels {
		st, err := sentinelState(n.Addr())
		if err == nil {
			return st.fields["address"], nil
		}
		errs = append(errs, err)
	}
	return "", fmt.Errorf("no sentinel answered: %w", errors.Join(errs...))
}

// failover runs Failover.
func (s *Sentinel) failover() (string, error) {
	deadline := time.Now().Add(failoverWait)
	oldIdx := s.masterIndex()
	oldMaster, newMaster := s.data[oldIdx], s.data[1-oldIdx]

	// A sentinel refuses (NOGOODSLAVE) while its view of the replica is
	// not fresh, for instance just after the previous failover.
	asked, err := s.requestFailover(oldMaster.Addr(), deadline)
	if err != nil {
		return "", err
	}

	demoted := false
	err = waitFor(deadline, "failover from "+oldMaster.Addr()+" to "+newMaster.Addr(), func() error {
		role, err := info(newMaster.Addr(), "replication")
		if err != nil {
			return fmt.Errorf("new master %s: %w", newMaster.Addr(), err)
		}
		if role["role"] != "master" {
			return fmt.Errorf("new master %s has role:%s", newMaster.Addr(), role["role"])
		}
		st, err := sentinelState(asked.Addr())
		if err != nil {
			return err
		}
		if st.fields["address"] != newMaster.Addr() {
			return fmt.Errorf("sentinel %s still reports master %s", asked.Addr(), st.fields["address"])
		}
		if !oldMaster.running() {
			// The test stopped it: there is nothing to demote.
			return s.sentinelsAgree(newMaster)
		}
		// The switch is official: make the former master a replica.
		if !demoted {
			old, err := info(oldMaster.Addr(), "replication")
			if err != nil {
				return fmt.Errorf("former master %s: %w", oldMaster.Addr(), err)
			}
			if old["role"] == "master" {
				if _, err := command(oldMaster.Addr(), time.Second, "REPLICAOF", "127.0.0.1", strconv.Itoa(newMaster.port)); err != nil {
					return fmt.Errorf("former master %s: REPLICAOF: %w", oldMaster.Addr(), err)
				}
			}
			demoted = true
		}
		if err := inSync(newMaster, oldMaster); err != nil {
			return err
		}
		return s.sentinelsAgree(newMaster)
	})
	if err != nil {
		return "", fmt.Errorf("%w\nlog of sentinel %s:\n%s", err, asked.Addr(), logTail(filepath.Join(asked.dir, logName), 0))
	}
	s.mu.Lock()
	s.master = 1 - oldIdx
	s.mu.Unlock()
	return newMaster.Addr(), nil
}

// requestFailover sends SENTINEL FAILOVER to a sentinel that is not in
// TILT mode and still reports oldMaster, retrying until one accepts or
// deadline passes, and returns that sentinel. A sentinel that answers
// INPROG is already failing the master over and counts as accepting.
func (s *Sentinel) requestFailover(oldMaster string, deadline time.Time) (*Server, error) {
	for {
		var errs []error
		for _, n := range s.sentinels {
			st, err := sentinelState(n.Addr())
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if st.tilt {
				errs = append(errs, fmt.Errorf("sentinel %s is in TILT mode", n.Addr()))
				continue
			}
			if st.fields["address"] != oldMaster {
				errs = append(errs, fmt.Errorf("sentinel %s reports master %s, not %s", n.Addr(), st.fields["address"], oldMaster))
				continue
			}
			_, err = command(n.Addr(), time.Second, "SENTINEL", "FAILOVER", MasterName)
			if err == nil || strings.HasPrefix(err.Error(), "INPROG") {
				return n, nil
			}
			errs = append(errs, fmt.Errorf("sentinel %s: SENTINEL FAILOVER: %w", n.Addr(), err))
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no sentinel accepted SENTINEL FAILOVER %s: %w", MasterName, errors.Join(errs...))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sentinelsAgree checks that every sentinel reports master as the master,
// not down, with one replica and three sentinels including itself.
func (s *Sentinel) sentinelsAgree(master *Server) error {
	want := map[string]string{
		"status":    "ok",
		"address":   master.Addr(),
		"slaves":    "1",
		"sentinels": strconv.Itoa(sentinelCount),
	}
	for _, n := range s.sentinels {
		st, err := sentinelState(n.Addr())
		if err != nil {
			return err
		}
		for k, v := range want {
			if st.fields[k] != v {
				return fmt.Errorf("sentinel %s reports %s=%s, want %s", n.Addr(), k, st.fields[k], v)
			}
		}
	}
	return nil
}

// running reports whether the server's process is running, that is, it
// was neither stopped nor killed nor closed.
func (s *Server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// sentinelLogs returns the end of every sentinel's log.
func (s *Sentinel) sentinelLogs() string {
	var b strings.Builder
	for _, n := range s.sentinels {
		fmt.Fprintf(&b, "log of sentinel %s:\n%s\n", n.Addr(), logTail(filepath.Join(n.dir, logName), 0))
	}
	return strings.TrimRight(b.String(), "\n")
}

// sentinelView is what a sentinel's INFO sentinel says about MasterName.
type sentinelView struct {
	tilt bool
	// fields holds the master's line: name, status, address, slaves and
	// sentinels (the latter counting the sentinel itself).
	fields map[string]string
}

// sentinelState reads a sentinel's INFO sentinel.
func sentinelState(addr string) (sentinelView, error) {
	f, err := info(addr, "sentinel")
	if err != nil {
		return sentinelView{}, fmt.Errorf("sentinel %s: %w", addr, err)
	}
	v := sentinelView{tilt: f["sentinel_tilt"] == "1"}
	for k, line := range f {
		if !strings.HasPrefix(k, "master") {
			continue
		}
		fields := map[string]string{}
		for _, kv := range strings.Split(line, ",") {
			if k, val, ok := strings.Cut(kv, "="); ok {
				fields[k] = val
			}
		}
		if fields["name"] == MasterName {
			v.fields = fields
			return v, nil
		}
	}
	return sentinelView{}, fmt.Errorf("sentinel %s does not monitor %s", addr, MasterName)
}

// inSync checks that replica is a replica of master, and that both see
// the link up and the initial sync done.
func inSync(master, replica *Server) error {
	r, err := info(replica.Addr(), "replication")
	if err != nil {
		return fmt.Errorf("replica %s: %w", replica.Addr(), err)
	}
	if r["role"] != "slave" || r["master_port"] != strconv.Itoa(master.port) ||
		r["master_link_status"] != "up" || r["master_sync_in_progress"] != "0" {
		return fmt.Errorf("replica %s: role:%s master_port:%s master_link_status:%s master_sync_in_progress:%s",
			replica.Addr(), r["role"], r["master_port"], r["master_link_status"], r["master_sync_in_progress"])
	}
	m, err := info(master.Addr(), "replication")
	if err != nil {
		return fmt.Errorf("master %s: %w", master.Addr(), err)
	}
	for k, v := range m {
		if strings.HasPrefix(k, "slave") && strings.Contains(","+v+",", ",port="+strconv.Itoa(replica.port)+",") {
			if !strings.Contains(","+v+",", ",state=online,") {
				return fmt.Errorf("master %s reports %s:%s", master.Addr(), k, v)
			}
			return nil
		}
	}
	return fmt.Errorf("master %s does not list replica %s", master.Addr(), replica.Addr())
}

// info returns the "key:value" lines of one section of INFO.
func info(addr, section string) (map[string]string, error) {
	text, err := command(addr, time.Second, "INFO", section)
	if err != nil {
		return nil, fmt.Errorf("INFO %s: %w", section, err)
	}
	fields := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields, nil
}

// waitFor calls cond until it returns nil, pausing between calls, and
// returns an error wrapping cond's last one once deadline has passed.
func waitFor(deadline time.Time, what string, cond func() error) error {
	start := time.Now()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: not reached after %v: %w", what, time.Since(start).Round(time.Millisecond), err)
		}
		time.Sleep(sentinelPoll)
	}
}
