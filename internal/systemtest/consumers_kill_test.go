package systemtest_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// The child side of TestConsumerKilled: run only when the parent sets the
// variables. It consumes the queue with three handlers, each holding its
// delivery until the process is killed, and says when one holds one.
func TestChildConsume(t *testing.T) {
	if os.Getenv("REDELAY_CONSUME_ADDRS") == "" {
		return // not a child: nothing to do
	}
	rdb := childClient("REDELAY_CONSUME")
	q := blocking.New[string](rdb, os.Getenv("REDELAY_CONSUME_QUEUE"))
	err := q.Consume(context.Background(), func(ctx context.Context, d *blocking.Delivery[string]) error {
		fmt.Printf("HOLDING %s\n", d.ID)
		<-ctx.Done() // "working" until SIGKILL
		return ctx.Err()
	}, blocking.WithConcurrency(3))
	fmt.Printf("ERROR %v\n", err)
	os.Exit(1)
}

// A consuming process killed with SIGKILL cannot remove its record: it
// stays listed by inspect.Consumers, with its PID, concurrency and the
// delivery it held, until 30 s pass without a refresh, and is gone within
// a minute of the kill.
func TestConsumerKilled(t *testing.T) {
	t.Parallel()
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		t.Parallel() // each waits half a minute for the record to expire
		ctx := context.Background()
		name := redistest.QueueName(t)
		cmd := redistest.Rerun(ctx, "TestChildConsume", "REDELAY_CONSUME_QUEUE="+name)
		cmd.Env = append(cmd.Env, childEnv(t, rdb, "REDELAY_CONSUME")...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pid := cmd.Process.Pid

		q := blocking.New[string](rdb, name)
		defer q.Close()
		if _, err := q.Offer(ctx, "order-1"); err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HOLDING ") {
			t.Fatalf("child said %q, %v", line, err)
		}
		in := inspect.New(rdb)
		// The child's record, as it last refreshed it (every 5 s).
		find := func() (inspect.Consumer, bool) {
			t.Helper()
			cs, err := in.Consumers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cs {
				if c.Queue == name && c.PID == pid {
					return c, true
				}
			}
			return inspect.Consumer{}, false
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			c, ok := find()
			if ok && c.InFlight == 1 {
				if c.Concurrency != 3 || c.Host == "" || c.Started.IsZero() {
					t.Fatalf("the child's record: %+v", c)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the child is not listed with its delivery in flight: %+v, %v", c, ok)
			}
			time.Sleep(200 * time.Millisecond)
		}

		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		killed := time.Now()
		if _, ok := find(); !ok {
			t.Fatal("the killed child's record vanished at once: nothing should have removed it")
		}
		for {
			if _, ok := find(); !ok {
				break
			}
			if time.Since(killed) > time.Minute {
				t.Fatal("the killed child is still listed a minute after the kill")
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("the killed consumer left the list %v after the kill", time.Since(killed).Round(100*time.Millisecond))
	})
}
