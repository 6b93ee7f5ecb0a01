package systemtest_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
)

// This file proves two points of the contract of groups (blocking.WithGroup)
// with real processes: a consumer killed with -9 while it holds a group's
// only slot (WithGroupConcurrency(1)) holds it until its lease expires, not
// later, and the group's order holds; and three consuming processes keep a
// group's limit and order between them, on a standalone server and on the
// 3-master cluster, with items ready at once or delayed on a queue of
// several partitions.

// The child side of TestGroupKilled: run only when the parent sets the
// variables. It consumes the queue, one item of a group at a time, says
// which item it holds, and holds it until the process is killed.
func TestChildGroupHold(t *testing.T) {
	if os.Getenv("REDELAY_GHOLD_ADDRS") == "" {
		return // not a child: nothing to do
	}
	rdb := childClient("REDELAY_GHOLD")
	vis, _ := time.ParseDuration(os.Getenv("REDELAY_GHOLD_VISIBILITY"))
	q := blocking.New[string](rdb, os.Getenv("REDELAY_GHOLD_QUEUE"), blocking.WithVisibilityTimeout(vis))
	err := q.Consume(context.Background(), func(ctx context.Context, d *blocking.Delivery[string]) error {
		fmt.Printf("HOLDING %s %s %d\n", d.Value, d.ID, d.Attempt)
		select {} // "working" until SIGKILL
	}, blocking.WithGroupConcurrency(1))
	fmt.Printf("ERROR %v\n", err)
	os.Exit(1)
}

// groupEvent is one delivery seen by a handler of the parent process.
type groupEvent struct {
	at      time.Time
	value   string
	id      string
	attempt int
}

// A consumer process killed with SIGKILL while it holds the only slot of
// group g (WithGroupConcurrency(1)): no other item of g is delivered before
// the lease expires; then g/0 comes back first, with Attempt 2, within
// moments of the lease's deadline, and the rest of g follows in order.
// Meanwhile another group, h, is not held back.
func TestGroupKilled(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Parallel()
		const (
			vis    = 3 * time.Second
			gItems = 6
			hItems = 10
			// Between the server's clock (the lease's deadline) and this
			// process's, on one machine, and the rounding to ms.
			slack = 25 * time.Millisecond
		)
		ctx := context.Background()
		name := redistest.QueueName(t)
		k := redistest.KeysOf(name)
		cmd := redistest.Rerun(ctx, "TestChildGroupHold", "REDELAY_GHOLD_QUEUE="+name, "REDELAY_GHOLD_VISIBILITY="+vis.String())
		cmd.Env = append(cmd.Env, childEnv(t, rdb, "REDELAY_GHOLD")...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		lines := make(chan string, 64)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()

		q := blocking.New[string](rdb, name)
		t.Cleanup(func() { _ = q.Close() })
		// The child's Consume records the limit before it receives: from
		// then on it can hold g/0 only.
		redistest.WaitFor(t, 20*time.Second, "the child's group limit", func() bool {
			return rdb.HGet(ctx, k.Meta, "group_limit").Val() == "1"
		})
		offered := time.Now() // the child's lease began after this
		for i := range gItems {
			if _, err := q.Offer(ctx, fmt.Sprintf("g/%d", i), blocking.WithGroup("g")); err != nil {
				t.Fatal(err)
			}
		}
		var held, heldID string
		var heldAttempt int
		timeout := time.After(20 * time.Second)
		for held == "" {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatal("the child exited without holding an item")
				}
				if strings.HasPrefix(line, "ERROR") {
					t.Fatalf("child: %s", line)
				}
				if _, err := fmt.Sscanf(line, "HOLDING %s %s %d", &held, &heldID, &heldAttempt); err != nil {
					held = ""
				}
			case <-timeout:
				t.Fatal("the child did not say it holds an item")
			}
		}
		if held != "g/0" || heldAttempt != 1 {
			t.Fatalf("the child holds %s, attempt %d; want g/0, attempt 1", held, heldAttempt)
		}

		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		killed := time.Now()
		// Read once the child is dead: its lease, extended while it lived,
		// ends at this deadline and not later.
		toks, err := rdb.HGetAll(ctx, k.GTok).Result()
		if err != nil || len(toks) != 1 {
			t.Fatalf("group leases after the kill: %v, %v; want one, of g", toks, err)
		}
		var deadline time.Time
		for tok, g := range toks {
			if g != "g" {
				t.Fatalf("the lease held is of group %q, want g", g)
			}
			ms, err := rdb.ZScore(ctx, k.Leases, tok).Result()
			if err != nil {
				t.Fatalf("the lease of g/0: %v", err)
			}
			deadline = time.UnixMilli(int64(ms))
		}
		gs, err := q.Groups(ctx, 0, 10)
		if err != nil || len(gs) != 1 || gs[0] != (blocking.GroupInfo{Key: "g", Ready: gItems - 1, InFlight: 1}) {
			t.Fatalf("Groups after the kill = %+v, %v", gs, err)
		}

		var mu sync.Mutex
		var events []groupEvent
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
				mu.Lock()
				events = append(events, groupEvent{time.Now(), d.Value, d.ID, d.Attempt})
				mu.Unlock()
				return nil
			}, blocking.WithConcurrency(4), blocking.WithGroupConcurrency(1))
		}()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Errorf("Consume = %v", err)
				}
			}
		}
		t.Cleanup(stop)
		hOffered := time.Now()
		for i := range hItems {
			if _, err := q.Offer(ctx, fmt.Sprintf("h/%d", i), blocking.WithGroup("h")); err != nil {
				t.Fatal(err)
			}
		}
		left := deadline.Sub(hOffered) // how long g's slot stays held after h is offered

		// "Not later": g comes back within a generous bound of the
		// deadline, however loaded the machine.
		redistest.WaitFor(t, time.Until(deadline)+15*time.Second, "every item of g and h", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(events) >= gItems+hItems
		})
		stop()

		var g, h []groupEvent
		for _, e := range events {
			if strings.HasPrefix(e.value, "g/") {
				g = append(g, e)
			} else {
				h = append(h, e)
			}
		}
		if len(g) != gItems || len(h) != hItems {
			t.Fatalf("delivered %d items of g, %d of h; want %d and %d: %v", len(g), len(h), gItems, hItems, events)
		}
		for i, e := range g {
			want := 1
			if i == 0 {
				want = 2
			}
			if e.value != fmt.Sprintf("g/%d", i) || e.attempt != want {
				t.Fatalf("the %d-th delivery of g is %s, attempt %d; want g/%d, attempt %d: %v", i+1, e.value, e.attempt, i, want, g)
			}
		}
		if g[0].id != heldID {
			t.Fatalf("g/0 came back with ID %s, the child held %s", g[0].id, heldID)
		}
		for i, e := range h {
			if e.value != fmt.Sprintf("h/%d", i) || e.attempt != 1 {
				t.Fatalf("the %d-th delivery of h is %s, attempt %d", i+1, e.value, e.attempt)
			}
		}
		back := g[0].at
		// Not before the lease expired: lower bounds only.
		if back.Before(deadline.Add(-slack)) {
			t.Fatalf("g/0 came back %v before its lease's deadline", deadline.Sub(back))
		}
		if since := back.Sub(offered); since < vis-slack {
			t.Fatalf("g/0 came back %v after it was offered, within the %v visibility timeout", since, vis)
		}
		// Not later.
		if late := back.Sub(deadline); late > 15*time.Second {
			t.Fatalf("g/0 came back %v after its lease's deadline", late)
		}
		// h was not held back by g's slot: it flowed while g/0's lease
		// was still held. Only judged when h was offered well before the
		// deadline (a machine so loaded that it was not cannot tell).
		before := 0
		for _, e := range h {
			if e.at.Before(back) {
				before++
			}
		}
		if left >= time.Second {
			if before == 0 {
				t.Fatalf("no item of h was delivered while g's slot was held (%v of it left when h was offered)", left.Round(time.Millisecond))
			}
		} else {
			t.Logf("h offered only %v before g's lease's deadline: its flow is not judged", left)
		}
		st, err := q.Stats(ctx)
		if err != nil || st.Ready != 0 || st.Inflight != 0 || st.Retry != 0 || st.Dead != 0 {
			t.Fatalf("Stats after = %+v, %v", st, err)
		}
		if gs, err := q.Groups(ctx, 0, 10); err != nil || len(gs) != 0 {
			t.Fatalf("Groups after = %+v, %v", gs, err)
		}
		t.Logf("kill -9 to g/0's return: %v; lease deadline to return: %v; %d of %d items of h delivered meanwhile",
			back.Sub(killed).Round(time.Millisecond), back.Sub(deadline).Round(time.Millisecond), before, hItems)
	})
}

// The child side of TestGroupThreeProcesses: run only when the parent sets
// the variables. It consumes the queue (WithConcurrency(4),
// WithGroupConcurrency(1)) until SIGTERM, and reports each delivery in
// Redis: it counts the group's items in flight up on start (INCR: the
// count it gets back must be 1) and down at the end (DECR), and appends
// "value attempt pid" to the report's list, while it holds the item.
func TestChildGroupConsume(t *testing.T) {
	if os.Getenv("REDELAY_GROUPS_ADDRS") == "" {
		return // not a child: nothing to do
	}
	rdb := childClient("REDELAY_GROUPS")
	parts, _ := strconv.Atoi(os.Getenv("REDELAY_GROUPS_PARTITIONS"))
	report := os.Getenv("REDELAY_GROUPS_REPORT")
	q := blocking.New[string](rdb, os.Getenv("REDELAY_GROUPS_QUEUE"), blocking.WithPartitions(parts))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		os.Exit(2)
	}
	pid := os.Getpid()
	err := q.Consume(ctx, func(ctx context.Context, d *blocking.Delivery[string]) error {
		flight := groupFlightKey(report, groupOfValue(d.Value))
		n, err := rdb.Incr(ctx, flight).Result()
		if err != nil {
			fail(err)
		}
		if n != 1 {
			if err := rdb.RPush(ctx, report+":over", fmt.Sprintf("%s (attempt %d, pid %d) started with %d of its group in flight", d.Value, d.Attempt, pid, n)).Err(); err != nil {
				fail(err)
			}
		}
		if err := rdb.RPush(ctx, report+":log", fmt.Sprintf("%s %d %d", d.Value, d.Attempt, pid)).Err(); err != nil {
			fail(err)
		}
		time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) // some work
		if err := rdb.Decr(ctx, flight).Err(); err != nil {
			fail(err)
		}
		return nil
	}, blocking.WithConcurrency(4), blocking.WithGroupConcurrency(1))
	stop()
	_ = q.Close()
	_ = rdb.Close()
	if !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "ERROR %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// groupOfValue returns the group of a value "group/n".
func groupOfValue(v string) string {
	g, _, _ := strings.Cut(v, "/")
	return g
}

// groupFlightKey is the key of group g's count of items in flight, as the
// handlers of TestChildGroupConsume keep it.
func groupFlightKey(report, g string) string { return report + ":flight:" + g }

// groupChild is one consuming process of TestGroupThreeProcesses.
type groupChild struct {
	cmd  *exec.Cmd
	out  *redistest.Logs // its standard output and error
	done chan struct{}   // closed once it exited
	err  error           // cmd.Wait's, once done
}

// Three consuming processes, each with WithGroupConcurrency(1) and
// WithConcurrency(4), work through 8 groups of 25 items: every item is
// handled once and acked, no two items of one group are ever in flight at
// once across the processes (a server-side count, exact across them), and
// each group's items are handled in order. On a standalone server and on
// the 3-master cluster; with items offered ready, and with items offered
// delayed on a queue of 3 partitions (on the cluster, one per master).
func TestGroupThreeProcesses(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Parallel()
		t.Run("ready", func(t *testing.T) { groupThreeProcesses(t, rdb, 1, false) })
		t.Run("delayed-partitions", func(t *testing.T) { groupThreeProcesses(t, rdb, 3, true) })
	})
}

func groupThreeProcesses(t *testing.T, rdb redis.UniversalClient, parts int, delay bool) {
	const procs, groups, per = 3, 8, 25
	ctx := context.Background()
	name := redistest.QueueName(t)
	if c, ok := rdb.(*redis.ClusterClient); ok && parts > 1 {
		name = redistest.SpreadName(t, c, parts, 1)
	}
	// The groups, spread over the partitions: group i lives in partition
	// i mod parts.
	var gs []string
	for i := 0; len(gs) < groups; i++ {
		if g := fmt.Sprintf("tenant%d", i); keys.PartitionOf(g, parts) == len(gs)%parts {
			gs = append(gs, g)
		}
	}
	report := "grouptest:{" + name + "}"
	t.Cleanup(func() {
		ks := []string{report + ":log", report + ":over"}
		for _, g := range gs {
			ks = append(ks, groupFlightKey(report, g))
		}
		for _, k := range ks {
			rdb.Del(context.Background(), k)
		}
	})

	children := make([]*groupChild, procs)
	for i := range children {
		cmd := redistest.Rerun(ctx, "TestChildGroupConsume", "REDELAY_GROUPS_QUEUE="+name,
			"REDELAY_GROUPS_PARTITIONS="+strconv.Itoa(parts), "REDELAY_GROUPS_REPORT="+report)
		cmd.Env = append(cmd.Env, childEnv(t, rdb, "REDELAY_GROUPS")...)
		c := &groupChild{cmd: cmd, out: &redistest.Logs{}, done: make(chan struct{})}
		cmd.Stdout, cmd.Stderr = c.out, c.out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			c.err = cmd.Wait()
			close(c.done)
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-c.done })
		children[i] = c
	}
	// alive fails the test when a child exited before it was told to.
	alive := func() {
		t.Helper()
		for i, c := range children {
			select {
			case <-c.done:
				t.Fatalf("child %d exited: %v\n%s", i, c.err, c.out.String())
			default:
			}
		}
	}
	in := inspect.New(rdb)
	redistest.WaitFor(t, 20*time.Second, "three consumers of the queue", func() bool {
		alive()
		cs, err := in.Consumers(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, c := range cs {
			if c.Queue == name {
				n++
			}
		}
		return n == procs
	})

	q := blocking.New[string](rdb, name, blocking.WithPartitions(parts))
	t.Cleanup(func() { _ = q.Close() })
	start := time.Now()
	if delay {
		dq := delayed.New(q, delayed.WithoutTransfer()) // the consumers transfer
		t.Cleanup(func() { _ = dq.Close() })
		for _, g := range gs {
			values := make([]string, per)
			for i := range values {
				values[i] = fmt.Sprintf("%s/%d", g, i)
			}
			// One due time for the whole batch: the order of the offer
			// decides among them.
			if _, err := dq.OfferBatch(ctx, values, 300*time.Millisecond, delayed.WithGroup(g)); err != nil {
				t.Fatal(err)
			}
		}
	} else {
		for i := range per {
			for _, g := range gs {
				if _, err := q.Offer(ctx, fmt.Sprintf("%s/%d", g, i), blocking.WithGroup(g)); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	redistest.WaitFor(t, 20*time.Second, "every item handled", func() bool {
		alive()
		n, err := rdb.LLen(ctx, report+":log").Result()
		if err != nil {
			t.Fatal(err)
		}
		return n >= groups*per
	})
	handled := time.Since(start)

	// Stop the children: each settles what it holds and gives back what
	// it leased ahead.
	for _, c := range children {
		if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range children {
		select {
		case <-c.done:
			if c.err != nil {
				t.Fatalf("child %d: %v\n%s", i, c.err, c.out.String())
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("child %d did not stop on SIGTERM", i)
		}
	}

	over, err := rdb.LRange(ctx, report+":over", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(over) > 0 {
		t.Errorf("%d times a group had two items in flight, limit 1: %v", len(over), over)
	}
	log, err := rdb.LRange(ctx, report+":log", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]int{}
	byPID := map[string]int{}
	for _, line := range log {
		f := strings.Fields(line)
		if len(f) != 3 {
			t.Fatalf("report line %q", line)
		}
		g := groupOfValue(f[0])
		if want := fmt.Sprintf("%s/%d", g, next[g]); f[0] != want || f[1] != "1" {
			t.Fatalf("group %s: handled %s attempt %s, want %s attempt 1 (once each, in order): %v", g, f[0], f[1], want, log)
		}
		next[g]++
		byPID[f[2]]++
	}
	if len(log) != groups*per {
		t.Fatalf("%d deliveries handled, want %d", len(log), groups*per)
	}
	for _, g := range gs {
		if next[g] != per {
			t.Fatalf("group %s: %d items handled, want %d", g, next[g], per)
		}
		if v := rdb.Get(ctx, groupFlightKey(report, g)).Val(); v != "0" {
			t.Fatalf("group %s: %q in flight after the run", g, v)
		}
	}
	if len(byPID) < 2 {
		t.Fatalf("only %d process handled items: %v", len(byPID), byPID)
	}
	// Every item acked: nothing left to come back.
	st, err := q.Stats(ctx)
	if err != nil || st.Ready != 0 || st.Inflight != 0 || st.Retry != 0 || st.Delayed != 0 || st.Dead != 0 {
		t.Fatalf("Stats after the run = %+v, %v", st, err)
	}
	if left, err := q.Groups(ctx, 0, 10); err != nil || len(left) != 0 {
		t.Fatalf("Groups after the run = %+v, %v", left, err)
	}
	t.Logf("%d items of %d groups handled by %d processes in %v; per process: %v",
		groups*per, groups, procs, handled.Round(time.Millisecond), byPID)
}
