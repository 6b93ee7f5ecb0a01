package systemtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// The child side of TestKill9: run only when the parent sets the variables.
// It receives one item, reports it, and waits to be killed.
func TestChildConsumer(t *testing.T) {
	addrs := os.Getenv("REDELAY_CHILD_ADDRS")
	if addrs == "" {
		return // not a child: nothing to do
	}
	rdb := childClient("REDELAY_CHILD")
	vis, _ := time.ParseDuration(os.Getenv("REDELAY_CHILD_VISIBILITY"))
	q := blocking.New[string](rdb, os.Getenv("REDELAY_CHILD_QUEUE"), blocking.WithVisibilityTimeout(vis))
	d, err := q.Receive(context.Background())
	if err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("RECEIVED %s %d\n", d.ID, d.Attempt)
	select {} // "working" until SIGKILL
}

// A consumer process is killed with SIGKILL while it holds a lease; the item
// is delivered again, with Attempt 2, when the visibility timeout passes:
// not before, and within milliseconds after.
func TestKill9(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		const vis = time.Second
		name := redistest.QueueName(t)
		cmd := redistest.Rerun(context.Background(), "TestChildConsumer", "REDELAY_CHILD_QUEUE="+name, "REDELAY_CHILD_VISIBILITY="+vis.String())
		cmd.Env = append(cmd.Env, childEnv(t, rdb, "REDELAY_CHILD")...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

		q := blocking.New[string](rdb, name, blocking.WithVisibilityTimeout(vis))
		defer q.Close()
		offered := time.Now() // the child's lease began after this
		if _, err := q.Offer(context.Background(), "order-1"); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("child said nothing: %v", err)
		}
		var id string
		var attempt int
		if _, err := fmt.Sscanf(line, "RECEIVED %s %d", &id, &attempt); err != nil || attempt != 1 {
			t.Fatalf("child said %q", line)
		}
		received := time.Now()
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()

		d := seedtest.ReceiveWithin(t, q, 10*time.Second)
		if d.ID != id || d.Attempt != 2 || d.Value != "order-1" {
			t.Fatalf("redelivered %+v, want %s attempt 2", d, id)
		}
		// The lease began between the offer and the child's line (which a
		// loaded machine can delay): not before the offer's time plus the
		// timeout, and at most a little after the line's.
		if since := time.Since(offered); since < vis-50*time.Millisecond {
			t.Fatalf("redelivered %v after the offer, before the %v visibility timeout", since, vis)
		}
		since := time.Since(received)
		// The documented bound (README, "What once means"): back at the
		// lease's deadline, within milliseconds; 500 ms allows for a
		// loaded machine. The lease began before the child said so.
		if since > vis+500*time.Millisecond {
			t.Fatalf("redelivered %v after the child received it: more than 500 ms past the %v visibility timeout", since, vis)
		}
		t.Logf("kill -9 to redelivery: %v (visibility timeout %v, lease taken %v before the kill)",
			time.Since(killed).Round(time.Millisecond), vis, killed.Sub(received).Round(time.Millisecond))
		if err := d.Ack(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// childEnv returns the variables that tell a child process, started by
// redistest.Rerun, the server or cluster of rdb: PREFIX_ADDRS, and
// PREFIX_CLUSTER=1 for a cluster. childClient reads them.
func childEnv(t *testing.T, rdb redis.UniversalClient, prefix string) []string {
	t.Helper()
	switch x := rdb.(type) {
	case *redis.Client:
		return []string{prefix + "_ADDRS=" + x.Options().Addr}
	case *redis.ClusterClient:
		return []string{prefix + "_ADDRS=" + strings.Join(x.Options().Addrs, ","), prefix + "_CLUSTER=1"}
	}
	t.Fatalf("childEnv: a %T", rdb)
	return nil
}

// childClient returns, in a child process, a client of what childEnv
// named under prefix.
func childClient(prefix string) redis.UniversalClient {
	addrs := os.Getenv(prefix + "_ADDRS")
	if os.Getenv(prefix+"_CLUSTER") == "1" {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	}
	return redis.NewClient(&redis.Options{Addr: addrs})
}

// killClients cuts every connection of the clients named name.
func killClients(t *testing.T, admin redis.UniversalClient, name string) int {
	t.Helper()
	ctx := context.Background()
	var killed atomic.Int64
	kill := func(ctx context.Context, c *redis.Client) error {
		list, err := c.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(list, "\n") {
			if !strings.Contains(line, " name="+name+" ") {
				continue
			}
			for _, f := range strings.Fields(line) {
				if id, ok := strings.CutPrefix(f, "id="); ok {
					n, _ := strconv.ParseInt(id, 10, 64)
					if err := c.ClientKillByFilter(ctx, "ID", strconv.FormatInt(n, 10)).Err(); err == nil {
						killed.Add(1)
					}
				}
			}
		}
		return nil
	}
	var err error
	switch x := admin.(type) {
	case *redis.Client:
		err = kill(ctx, x)
	case *redis.ClusterClient:
		err = x.ForEachShard(ctx, kill)
	}
	if err != nil {
		t.Fatal(err)
	}
	return int(killed.Load())
}

func namedClient(t *testing.T, rdb redis.UniversalClient, name string) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch x := rdb.(type) {
	case *redis.Client:
		o := *x.Options()
		o.ClientName = name
		c = redis.NewClient(&o)
	case *redis.ClusterClient:
		o := *x.Options()
		o.ClientName = name
		c = redis.NewClusterClient(&o)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// A consumer's connections are cut (CLIENT KILL) while it holds a lease and
// while it waits in Receive: the leased item comes back with Attempt 2 and
// the cut consumer's late Ack changes nothing; no item is lost or doubled.
func TestClientKilled(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.QueueName(t)
		victimName := "victim-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		vis := blocking.WithVisibilityTimeout(400 * time.Millisecond)
		victim := blocking.New[string](namedClient(t, rdb, victimName), name, vis)
		defer victim.Close()
		other := blocking.New[string](redistest.NewClientLike(t, rdb), name, vis)
		defer other.Close()

		if _, err := other.Offer(ctx, "leased"); err != nil {
			t.Fatal(err)
		}
		held := seedtest.ReceiveWithin(t, victim, 5*time.Second)
		if n := killClients(t, rdb, victimName); n == 0 {
			t.Fatal("no connection of the victim found to kill")
		}
		again := seedtest.ReceiveWithin(t, other, 5*time.Second)
		if again.ID != held.ID || again.Attempt != 2 {
			t.Fatalf("redelivery %+v", again)
		}
		if err := held.Ack(ctx); !errors.Is(err, blocking.ErrLeaseLost) {
			t.Fatalf("cut consumer's late Ack = %v, want ErrLeaseLost", err)
		}
		if err := again.Ack(ctx); err != nil {
			t.Fatal(err)
		}

		// Cut the victim while it waits in Receive, then offer: the item
		// arrives exactly once, wherever.
		got := make(chan *blocking.Delivery[string], 2)
		rctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			for rctx.Err() == nil {
				if d, err := victim.Receive(rctx); err == nil {
					got <- d
				}
			}
		})
		time.Sleep(200 * time.Millisecond)
		killClients(t, rdb, victimName)
		time.Sleep(100 * time.Millisecond)
		if _, err := other.Offer(ctx, "while waiting"); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-got:
			if d.Value != "while waiting" || d.Attempt != 1 {
				t.Fatalf("got %+v", d)
			}
			if err := d.Ack(ctx); err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the offered item never arrived after the connection was cut")
		}
		stop()
		wg.Wait()
		seedtest.ExpectNothing(t, other, 800*time.Millisecond)
	})
}

// settleFailures collects, from the queue's JSON log, the deliveries whose
// ack did not succeed (so their redelivery is expected).
type settleFailures struct {
	mu   sync.Mutex
	buf  strings.Builder
	seen map[string]bool
}

func (s *settleFailures) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *settleFailures) failed() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, line := range strings.Split(s.buf.String(), "\n") {
		var rec struct {
			Msg     string `json:"msg"`
			ID      string `json:"id"`
			Attempt int    `json:"attempt"`
		}
		// An ack that failed, or that found its lease gone (it expired
		// during the outage and the item was reclaimed): not acked.
		if json.Unmarshal([]byte(line), &rec) == nil &&
			(strings.Contains(rec.Msg, "could not settle") || strings.Contains(rec.Msg, "lease lost")) {
			out[fmt.Sprintf("%s/%d", rec.ID, rec.Attempt)] = true
		}
	}
	return out
}

// Redis (appendonly, appendfsync always) is killed and restarted while
// Consume works through a few thousand items: every item is handled at least
// once, none is lost, and no item whose ack succeeded comes back.
func TestRedisRestartDuringConsume(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t, redistest.WithAOF())
	rdb := srv.Client(t)
	var logs settleFailures
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	q := blocking.New[int](rdb, redistest.QueueName(t), blocking.WithLogger(logger),
		blocking.WithVisibilityTimeout(time.Second))
	defer q.Close()
	const n = 3000
	ctx := context.Background()
	for i := range n {
		if _, err := q.Offer(ctx, i); err != nil {
			t.Fatal(err)
		}
	}

	type delivery struct {
		id      string
		attempt int
	}
	var mu sync.Mutex
	handled := make(map[int][]delivery)
	count := 0
	halfway := make(chan struct{})
	cctx, cancel := context.WithCancel(ctx)
	returned := make(chan error, 1)
	go func() {
		returned <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[int]) error {
			mu.Lock()
			handled[d.Value] = append(handled[d.Value], delivery{d.ID, d.Attempt})
			count++
			if count == n/3 {
				close(halfway)
			}
			mu.Unlock()
			time.Sleep(200 * time.Microsecond) // some work
			return nil
		}, blocking.WithConcurrency(8), blocking.WithBackoff(seedtest.FastBackoff))
	}()

	<-halfway
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // longer than go-redis's own retries: acks fail
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		distinct := len(handled)
		mu.Unlock()
		ready, _ := q.Size(ctx)
		leases := rdb.ZCard(ctx, "redelay:{"+q.Name()+"}:leases").Val()
		if distinct == n && ready == 0 && leases == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart: %d of %d items handled, %d ready, %d leased", distinct, n, ready, leases)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(2500 * time.Millisecond) // any wrongly kept lease would expire and redeliver now
	cancel()
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("Consume = %v", err)
	}

	failed := logs.failed()
	mu.Lock()
	defer mu.Unlock()
	again := 0
	for v := range n {
		ds := handled[v]
		if len(ds) == 0 {
			t.Fatalf("item %d lost", v)
		}
		for i := 0; i < len(ds)-1; i++ {
			again++
			key := fmt.Sprintf("%s/%d", ds[i].id, ds[i].attempt)
			if !failed[key] {
				t.Errorf("item %d: delivery %s was acked, yet the item came back as attempt %d", v, key, ds[i+1].attempt)
			}
		}
	}
	t.Logf("%d items, %d handled more than once (their ack failed or came after the lease expired)", n, again)
	if dead, _ := q.DeadLetters().Size(ctx); dead != 0 {
		t.Fatalf("%d dead letters", dead)
	}
}
