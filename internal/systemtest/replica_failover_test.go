package systemtest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// Failovers and a slot move under load, with WithReplicaAck: a Sentinel
// master killed with SIGKILL, a Cluster replica promoted with CLUSTER
// FAILOVER, and a Cluster slot moved to another master. Producers offer
// (blocking and delayed, each with its own ID) and Consume receives and
// acks, throughout. What must hold, asserted: every offer that returned
// nil is delivered (at least once), consumers resume on their own, and
// delayed items due after the fault fire. What is measured and logged
// (docs/reliability.md quotes it), in lines starting with "replica ack":
// offers lost (none may be), deliveries doubled (allowed: at least once),
// how long consumers and producers took to resume, and what the offers
// returned meanwhile. The helpers foTally, foDeliveries, foKind and
// foLogHandler are failover_test.go's.

const (
	raTimeout      = time.Second // WithReplicaAck's
	raVisibility   = 2 * time.Second
	raOfferTimeout = 3 * time.Second
	raPace         = 4 * time.Millisecond // per producer
	raMinDelay     = 500 * time.Millisecond
	raMaxDelay     = 3 * time.Second
	raWarmup       = 1500 * time.Millisecond
	raAfter        = 2 * time.Second // load after the fault is over
	raDrainWait    = 20 * time.Second
	// raFillerKeys other keys share the moved slot: 10 per MIGRATE
	// (migBatch), a few hundred milliseconds in all.
	raFillerKeys = 5000
)

// raOffer is one offer and what it returned.
type raOffer struct {
	id         string
	start, end time.Time
	err        error
	due        time.Time // delayed offers: when it falls due (by this clock)
}

// raLoad is a queue under load: two producers of immediate items, one of
// delayed items, and a Consume of four handlers.
type raLoad struct {
	t    *testing.T
	name string
	rdb  redis.UniversalClient
	q    *blocking.Queue[string]
	dq   *delayed.Queue[string]
	logs *foTally

	stopOffers chan struct{}
	producers  sync.WaitGroup
	endOffers  func()
	offers     [3][]raOffer

	stopConsume context.CancelFunc
	consumed    chan error
	got         foDeliveries
	stopOnce    sync.Once
}

func raStart(t *testing.T, rdb redis.UniversalClient) *raLoad {
	l := &raLoad{t: t, name: redistest.QueueName(t), rdb: rdb, logs: &foTally{}, stopOffers: make(chan struct{}), consumed: make(chan error, 1)}
	l.q = blocking.New[string](rdb, l.name, blocking.WithReplicaAck(1, raTimeout),
		blocking.WithVisibilityTimeout(raVisibility), blocking.WithSweepInterval(250*time.Millisecond),
		blocking.WithLogger(slog.New(foLogHandler{sink: l.logs})))
	l.dq = delayed.New(l.q)
	l.endOffers = sync.OnceFunc(func() {
		close(l.stopOffers)
		l.producers.Wait()
	})
	t.Cleanup(l.stop)

	cctx, stop := context.WithCancel(context.Background())
	l.stopConsume = stop
	go func() {
		l.consumed <- l.q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			l.got.add(d.ID, d.Value)
			return nil
		}, blocking.WithConcurrency(4), blocking.WithShutdownTimeout(2*time.Second))
	}()
	for p := range l.offers {
		isDelayed := p == 2
		l.producers.Go(func() {
			tick := time.NewTicker(raPace)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-l.stopOffers:
					return
				case <-tick.C:
				}
				ctx, cancel := context.WithTimeout(context.Background(), raOfferTimeout)
				o := raOffer{id: fmt.Sprintf("p%d-%06d", p, i), start: time.Now()}
				if isDelayed {
					delay := raMinDelay + rand.N(raMaxDelay-raMinDelay)
					o.due = o.start.Add(delay)
					_, o.err = l.dq.Offer(ctx, o.id, delay, delayed.WithID(o.id))
				} else {
					o.due = o.start
					_, o.err = l.q.Offer(ctx, o.id, blocking.WithID(o.id))
				}
				cancel()
				o.end = time.Now()
				l.offers[p] = append(l.offers[p], o)
			}
		})
	}
	return l
}

// stop ends the load, Consume and the queues.
func (l *raLoad) stop() {
	l.stopOnce.Do(func() {
		l.endOffers()
		l.stopConsume()
		select {
		case err := <-l.consumed:
			if !errors.Is(err, context.Canceled) {
				l.t.Errorf("Consume = %v, want context.Canceled", err)
			}
		case <-time.After(15 * time.Second):
			l.t.Errorf("Consume did not return within 15 s of its context's end")
		}
		_ = l.dq.Close()
		_ = l.q.Close()
	})
}

// firstDelivery returns when the item id was first delivered.
func (l *raLoad) firstDelivery(id string) time.Time {
	l.got.mu.Lock()
	defer l.got.mu.Unlock()
	if ts := l.got.at[id]; len(ts) > 0 {
		return ts[0]
	}
	return time.Time{}
}

// longestPause returns the longest time from the fault on without an
// event of times (sorted or not): from the fault to the first event after
// it, or between two events until end.
func longestPause(times []time.Time, fault, end time.Time) time.Duration {
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	prev, longest := fault, time.Duration(0)
	for _, at := range times {
		if at.Before(fault) {
			continue
		}
		if at.After(end) {
			break
		}
		longest = max(longest, at.Sub(prev))
		prev = at
	}
	return max(longest, end.Sub(prev))
}

// deliveries returns the time of every delivery.
func (l *raLoad) deliveries() []time.Time {
	l.got.mu.Lock()
	defer l.got.mu.Unlock()
	var all []time.Time
	for _, ts := range l.got.at {
		all = append(all, ts...)
	}
	return all
}

// all returns every offer.
func (l *raLoad) all() []raOffer {
	var all []raOffer
	for _, o := range l.offers {
		all = append(all, o...)
	}
	return all
}

// finish stops the offers, waits until every offer that returned nil was
// delivered and the queue is empty (items stranded in the claimed list
// come back only after 30 s: they are counted, not waited for), stops
// Consume, then logs the figures as "replica ack (what): ..." and asserts
// what must hold. fault is when the fault began, over when it ended.
func (l *raLoad) finish(what string, fault, over time.Time) {
	t := l.t
	l.endOffers()
	all := l.all()
	var lastDue time.Time
	for _, o := range all {
		if o.due.After(lastDue) {
			lastDue = o.due
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), raDrainWait+raMaxDelay+10*time.Second)
	defer cancel()
	k := redistest.KeysOf(l.name)
	deadline := time.Now().Add(time.Until(lastDue) + raDrainWait)
	var stranded map[string]bool
	var state string
	for {
		claimed, _ := l.rdb.LRange(ctx, k.Claimed, 0, -1).Result()
		stranded = foIDs(claimed)
		missing, missingClaimed := 0, 0
		for _, o := range all {
			if o.err == nil && l.got.count(o.id) == 0 {
				missing++
				if stranded[o.id] {
					missingClaimed++
				}
			}
		}
		st, err := l.q.Stats(ctx)
		idle := err == nil && st.Ready == 0 && st.Delayed == 0 && st.Retry == 0 && st.Inflight == int64(len(claimed))
		state = fmt.Sprintf("%d offers that returned nil not delivered (%d of them in the claimed list); stats %+v, %v", missing, missingClaimed, st, err)
		if idle && missing == missingClaimed && l.got.quietFor() > 500*time.Millisecond && time.Now().After(lastDue) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%s: not drained within %v of the last due time: %s", what, raDrainWait, state)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	l.stop()

	// The figures.
	var ok, notRepl, failed, lost, dups, strandedN, dueAfter int
	var notReplDelivered, failedDelivered int
	var errs foTally
	var lostIDs, dupIDs []string
	var maxLate time.Duration
	var firstOK, firstStored time.Time
	for _, o := range all {
		n := l.got.count(o.id)
		if n > 1 {
			dups++
			dupIDs = append(dupIDs, fmt.Sprintf("%s ×%d", o.id, n))
		}
		switch {
		case o.err == nil:
			ok++
			if !o.start.Before(fault) && (firstOK.IsZero() || o.end.Before(firstOK)) {
				firstOK = o.end
			}
			if !o.start.Before(fault) && (firstStored.IsZero() || o.end.Before(firstStored)) {
				firstStored = o.end
			}
			switch {
			case n == 0 && stranded[o.id]:
				strandedN++
			case n == 0:
				lost++
				lostIDs = append(lostIDs, o.id)
			}
			if strings.HasPrefix(o.id, "p2-") && o.due.After(over) && n > 0 {
				dueAfter++
				if late := l.firstDelivery(o.id).Sub(o.due); late > maxLate {
					maxLate = late
				}
			}
		case errors.Is(o.err, blocking.ErrNotReplicated):
			notRepl++
			errs.add("ErrNotReplicated", o.end)
			if !o.start.Before(fault) && (firstStored.IsZero() || o.end.Before(firstStored)) {
				firstStored = o.end
			}
			if n > 0 {
				notReplDelivered++
			}
		default:
			failed++
			errs.add(foKind(o.err), o.end)
			if n > 0 {
				failedDelivered++
			}
		}
	}
	firstDelivery := l.got.firstAfter(fault)
	since := func(at time.Time) string {
		if at.IsZero() {
			return "never"
		}
		return at.Sub(fault).Round(10 * time.Millisecond).String()
	}
	// The longest pauses, from the fault to a second after it was over:
	// how long consumers and producers stalled.
	var stored, confirmed []time.Time
	for _, o := range all {
		if o.err == nil || errors.Is(o.err, blocking.ErrNotReplicated) {
			stored = append(stored, o.end)
		}
		if o.err == nil {
			confirmed = append(confirmed, o.end)
		}
	}
	end := over.Add(time.Second)
	pauseDeliveries := longestPause(l.deliveries(), fault, end)
	pauseStored, pauseConfirmed := longestPause(stored, fault, end), longestPause(confirmed, fault, end)
	t.Logf("replica ack (%s): %d offers returned nil, %d lost, %d delivered twice or more; %d stranded in the claimed list (back after 30 s)",
		what, ok, lost, dups, strandedN)
	t.Logf("replica ack (%s): from the fault (fault over after %s): first delivery %s, first offer stored %s, first offer confirmed by a replica %s; longest pause from the fault to 1 s after it was over: deliveries %v, offers stored %v, offers confirmed %v",
		what, since(over), since(firstDelivery), since(firstStored), since(firstOK),
		pauseDeliveries.Round(10*time.Millisecond), pauseStored.Round(10*time.Millisecond), pauseConfirmed.Round(10*time.Millisecond))
	t.Logf("replica ack (%s): %d offers returned ErrNotReplicated (%d of them delivered), %d failed otherwise (%d of them delivered): %s, %s",
		what, notRepl, notReplDelivered, failed, failedDelivered, errs.String(), errs.window(fault))
	t.Logf("replica ack (%s): %d delayed items due after the fault was over fired, the latest %v late; library warnings: %s",
		what, dueAfter, maxLate.Round(time.Millisecond), l.logs.String())
	if dups > 0 {
		t.Logf("replica ack (%s): delivered more than once (at least once allows it): %v", what, dupIDs[:min(len(dupIDs), 10)])
	}

	// What must hold.
	if len(l.got.bad) > 0 {
		t.Errorf("%s: %d deliveries carry another item's value: %v", what, len(l.got.bad), l.got.bad[:min(len(l.got.bad), 5)])
	}
	if lost > 0 {
		t.Errorf("%s: %d offers that returned nil (confirmed by a replica) were never delivered, e.g. %v", what, lost, lostIDs[:min(len(lostIDs), 10)])
	}
	if firstDelivery.IsZero() {
		t.Errorf("%s: nothing was delivered after the fault: consumers did not resume", what)
	}
	if firstOK.IsZero() {
		t.Errorf("%s: no offer made after the fault was confirmed: offers did not recover", what)
	}
	if dueAfter == 0 {
		t.Errorf("%s: no delayed item due after the fault fired", what)
	}
}

// TestSentinelKillWithReplicaAck kills the master (SIGKILL) of a Sentinel
// deployment while producers offer with WithReplicaAck(1, 1s) and Consume
// drains. The sentinels promote the replica; the new master has no
// replica until the killed one is restarted and made a replica of it, so
// meanwhile offers are stored but return ErrNotReplicated (after the
// timeout, which also slows acks, hence consumers, to a crawl). No offer
// that returned nil may be lost; consumers must resume on their own, and
// delayed items due after the failover must fire.
func TestSentinelKillWithReplicaAck(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	rdb := s.Client(t)
	l := raStart(t, rdb)
	foSleepUntil(time.Now().Add(raWarmup))

	oldMaster, newMaster := s.Master(), s.Replica()
	fault := time.Now()
	if err := oldMaster.Kill(); err != nil {
		t.Fatalf("killing the master %s: %v", oldMaster.Addr(), err)
	}
	redistest.WaitFor(t, 30*time.Second, "the sentinels failing over to "+newMaster.Addr(), func() bool {
		return s.Master().Addr() == newMaster.Addr()
	})
	switched := time.Now()
	// The killed master comes back (empty: no persistence) and is made a
	// replica of the new master at once, as an operator or a supervisor
	// would (the sentinels would too, after their next look at it, up to
	// 10 s later).
	if err := oldMaster.Restart(); err != nil {
		t.Fatalf("restarting %s: %v", oldMaster.Addr(), err)
	}
	admin := redis.NewClient(&redis.Options{Addr: oldMaster.Addr()})
	t.Cleanup(func() { _ = admin.Close() })
	newHost, newPort, _ := net.SplitHostPort(newMaster.Addr())
	if err := admin.ReplicaOf(context.Background(), newHost, newPort).Err(); err != nil {
		t.Fatalf("REPLICAOF on %s: %v", oldMaster.Addr(), err)
	}
	redistest.WaitFor(t, 30*time.Second, oldMaster.Addr()+" in sync as a replica of "+newMaster.Addr(), func() bool {
		info, err := admin.Info(context.Background(), "replication").Result()
		return err == nil && strings.Contains(info, "role:slave\r") && strings.Contains(info, "master_port:"+newPort+"\r") &&
			strings.Contains(info, "master_link_status:up\r") && strings.Contains(info, "master_sync_in_progress:0\r")
	})
	rejoined := time.Now()
	t.Logf("replica ack (sentinel kill): sentinels reported the new master %v after the kill; the restarted master was in sync as its replica %v after the kill",
		switched.Sub(fault).Round(10*time.Millisecond), rejoined.Sub(fault).Round(10*time.Millisecond))
	foSleepUntil(rejoined.Add(raAfter))
	l.finish("sentinel kill", fault, switched)
}

// TestSentinelForcedFailoverWithReplicaAck forces a failover (SENTINEL
// FAILOVER) under the same load. Without WithReplicaAck this is the case
// that loses acknowledged offers (TestSentinelFailoverLosesUnreplicatedWrites:
// the former master goes on acknowledging writes after the promotion,
// until the client switches); with it, those writes are not confirmed
// (their replica became a master and no longer copies them), so they
// return ErrNotReplicated, and no offer that returned nil may be lost.
func TestSentinelForcedFailoverWithReplicaAck(t *testing.T) {
	t.Parallel()
	s := redistest.StartSentinel(t)
	l := raStart(t, s.Client(t))
	foSleepUntil(time.Now().Add(raWarmup))
	fault := time.Now()
	s.Failover(t) // returns when the former master is a replica in sync
	over := time.Now()
	foSleepUntil(over.Add(raAfter))
	l.finish("sentinel forced failover", fault, over)
}

// TestClusterReplicaAckFailoverAndSlotMove runs two faults on one cluster
// of three masters with a replica each, each on a queue of its own under
// load with WithReplicaAck(1, 1s): CLUSTER FAILOVER sent to the replica of
// the master that serves the queue's slot (the replica becomes the
// master, the master its replica), then the queue's slot moved to another
// master as redis-cli --cluster reshard does it (SETSLOT IMPORTING and
// MIGRATING, MIGRATE of its keys in batches, SETSLOT NODE). Scripts meet
// MOVED, ASK and TRYAGAIN meanwhile; no offer that returned nil may be
// lost, and consumers must resume on their own.
func TestClusterReplicaAckFailoverAndSlotMove(t *testing.T) {
	t.Parallel()
	cl := redistest.StartClusterWithReplicas(t)
	hook := &migHook{}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(hook) })
	t.Cleanup(func() { _ = rdb.Close() })
	replies := func(what string, since time.Time) {
		t.Logf("replica ack (%s): error replies the nodes sent the client (redirects go-redis followed, and calls redelay sent again, included): %s, %s",
			what, hook.replies.String(), hook.replies.window(since))
		hook.replies.reset()
	}
	admins := map[string]*redis.Client{}
	admin := func(addr string) *redis.Client {
		if a, ok := admins[addr]; ok {
			return a
		}
		a := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = a.Close() })
		admins[addr] = a
		return a
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	masterOf := func(name string) string {
		m, err := rdb.MasterForKey(ctx, "{"+name+"}")
		if err != nil {
			t.Fatalf("MasterForKey: %v", err)
		}
		return m.Options().Addr
	}

	t.Run("failover", func(t *testing.T) {
		l := raStart(t, rdb)
		foSleepUntil(time.Now().Add(raWarmup))
		master := masterOf(l.name)
		replica := replicaOf(ctx, t, admin(master))
		slot := redisSlot(ctx, t, admin(master), l.name)
		fault := time.Now()
		if err := admin(replica).Do(ctx, "CLUSTER", "FAILOVER").Err(); err != nil {
			t.Fatalf("CLUSTER FAILOVER on %s: %v", replica, err)
		}
		redistest.WaitFor(t, 30*time.Second, replica+" serving the queue's slot", func() bool {
			role, err := admin(replica).Do(ctx, "ROLE").Slice()
			if err != nil || len(role) == 0 || role[0] != "master" {
				return false
			}
			owner := ""
			if slots, err := admin(master).ClusterSlots(ctx).Result(); err == nil {
				for _, r := range slots {
					if r.Start <= slot && slot <= r.End && len(r.Nodes) > 0 {
						owner = r.Nodes[0].Addr
					}
				}
			}
			return owner == replica
		})
		over := time.Now()
		t.Logf("replica ack (cluster failover): %s took over slot of %s %v after CLUSTER FAILOVER", replica, master, over.Sub(fault).Round(10*time.Millisecond))
		foSleepUntil(over.Add(raAfter))
		l.finish("cluster failover", fault, over)
		replies("cluster failover", fault)
	})

	t.Run("slot move", func(t *testing.T) {
		l := raStart(t, rdb)
		slot := redisSlot(ctx, t, admin(cl.Addrs()[0]), l.name)
		src := masterOf(l.name)
		// Other keys in the slot, as in a real cluster, so that moving
		// it takes a while.
		if _, err := admin(src).Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range raFillerKeys {
				p.Set(ctx, fmt.Sprintf("rafill:{%s}:%d", l.name, i), "x", 0)
			}
			return nil
		}); err != nil {
			t.Fatalf("filling slot %d: %v", slot, err)
		}
		foSleepUntil(time.Now().Add(raWarmup))
		var dst string
		ids := map[string]string{}
		var masters []string
		for _, addr := range cl.Addrs() {
			role, err := admin(addr).Do(ctx, "ROLE").Slice()
			if err != nil {
				t.Fatalf("ROLE on %s: %v", addr, err)
			}
			if role[0] != "master" {
				continue
			}
			masters = append(masters, addr)
			if ids[addr], err = admin(addr).ClusterMyID(ctx).Result(); err != nil {
				t.Fatalf("CLUSTER MYID on %s: %v", addr, err)
			}
			if addr != src && dst == "" {
				dst = addr
			}
		}
		mustDo := func(addr string, args ...any) {
			t.Helper()
			if err := admin(addr).Do(ctx, args...).Err(); err != nil {
				t.Fatalf("%v on %s: %v", args, addr, err)
			}
		}
		host, port, _ := net.SplitHostPort(dst)
		fault := time.Now()
		mustDo(dst, "CLUSTER", "SETSLOT", slot, "IMPORTING", ids[src])
		mustDo(src, "CLUSTER", "SETSLOT", slot, "MIGRATING", ids[dst])
		moved := 0
		for {
			keys, err := admin(src).ClusterGetKeysInSlot(ctx, slot, migBatch).Result()
			if err != nil {
				t.Fatalf("CLUSTER GETKEYSINSLOT %d on %s: %v", slot, src, err)
			}
			if len(keys) == 0 {
				break
			}
			args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
			for _, key := range keys {
				args = append(args, key)
			}
			mustDo(src, args...)
			moved += len(keys)
		}
		mustDo(dst, "CLUSTER", "SETSLOT", slot, "NODE", ids[dst])
		mustDo(src, "CLUSTER", "SETSLOT", slot, "NODE", ids[dst])
		for _, addr := range masters {
			if addr != src && addr != dst {
				mustDo(addr, "CLUSTER", "SETSLOT", slot, "NODE", ids[dst])
			}
		}
		over := time.Now()
		t.Logf("replica ack (slot move): slot %d (%d keys) moved %s -> %s in %v",
			slot, moved, src, dst, over.Sub(fault).Round(time.Millisecond))
		foSleepUntil(over.Add(raAfter))
		l.finish("slot move", fault, over)
		replies("slot move", fault)
	})

	// WAIT goes to the master of the queue's slot, on the write's
	// connection: with that master's replica killed, its queue's offers
	// are not confirmed, while a queue on another master's are.
	t.Run("routing", func(t *testing.T) {
		name := redistest.QueueName(t)
		master := masterOf(name)
		other := redistest.QueueName(t)
		for masterOf(other) == master {
			other = redistest.QueueName(t)
		}
		replica := replicaOf(ctx, t, admin(master))
		if err := cl.Node(replica).Kill(); err != nil {
			t.Fatalf("killing %s: %v", replica, err)
		}
		for _, c := range []struct {
			name string
			want error
		}{{name, blocking.ErrNotReplicated}, {other, nil}} {
			q := blocking.New[string](rdb, c.name, blocking.WithReplicaAck(1, 500*time.Millisecond))
			t.Cleanup(func() { _ = q.Close() })
			if _, err := q.Offer(ctx, "x"); !errors.Is(err, c.want) {
				t.Errorf("Offer to %s (on %s; the replica of %s killed) = %v, want %v", c.name, masterOf(c.name), master, err, c.want)
			}
			d, err := q.Receive(ctx)
			if err != nil {
				t.Fatalf("Receive from %s: %v", c.name, err)
			}
			if err := d.Ack(ctx); !errors.Is(err, c.want) {
				t.Errorf("Ack in %s = %v, want %v", c.name, err, c.want)
			}
		}
	})
}

// replicaOf returns the address of the replica of the master at addr.
func replicaOf(ctx context.Context, t *testing.T, master *redis.Client) string {
	t.Helper()
	id, err := master.ClusterMyID(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER MYID on %s: %v", master.Options().Addr, err)
	}
	lines, err := master.Do(ctx, "CLUSTER", "REPLICAS", id).StringSlice()
	if err != nil || len(lines) != 1 {
		t.Fatalf("CLUSTER REPLICAS of %s = %v, %v; want one", master.Options().Addr, lines, err)
	}
	addr := strings.Fields(lines[0])[1]
	return addr[:strings.IndexByte(addr, '@')]
}

// redisSlot returns the hash slot of the queue called name.
func redisSlot(ctx context.Context, t *testing.T, a *redis.Client, name string) int {
	t.Helper()
	slot, err := a.ClusterKeySlot(ctx, "{"+name+"}").Result()
	if err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	return int(slot)
}
