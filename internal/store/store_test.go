package store

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// A caller that stops waiting gets its reason at once; the call goes on,
// and its result reaches the late handler, never both.
func TestAwaitAbandons(t *testing.T) {
	var bg Calls
	release := make(chan struct{})
	late := make(chan int, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	start := time.Now()
	v, err := Await(ctx, nil, &bg, func(context.Context) (int, error) {
		<-release
		return 42, nil
	}, func(v int, err error) { late <- v })
	if !errors.Is(err, context.Canceled) || v != 0 || time.Since(start) > time.Second {
		t.Fatalf("Await = %d, %v after %v", v, err, time.Since(start))
	}
	if bg.Wait(10 * time.Millisecond) {
		t.Fatal("Wait reported no call running while one is")
	}
	close(release)
	if got := <-late; got != 42 {
		t.Fatalf("late handler got %d", got)
	}
	if !bg.Wait(time.Second) {
		t.Fatal("the call did not finish")
	}
}

// A stop channel stops the wait with ErrStopped; a result that is ready
// first is returned, and the late handler is not called.
func TestAwaitStopAndResult(t *testing.T) {
	var bg Calls
	stop := make(chan struct{})
	close(stop)
	if _, err := Await(context.Background(), stop, &bg, func(context.Context) (int, error) { return 1, nil }, nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("Await with a closed stop = %v", err)
	}
	var lates atomic.Int64
	for range 1000 {
		ctx, cancel := context.WithCancel(context.Background())
		v, err := Await(ctx, make(chan struct{}), &bg, func(context.Context) (int, error) {
			cancel() // the caller's ctx ends as the call returns
			return 7, nil
		}, func(int, error) { lates.Add(1) })
		if err == nil && v != 7 {
			t.Fatalf("Await = %d", v)
		}
		if err != nil && v != 0 {
			t.Fatalf("Await = %d, %v: a value with an error", v, err)
		}
	}
	bg.Wait(time.Second)
	t.Logf("%d of 1000 results went to the late handler", lates.Load())
}

// Blocks stay under the client's read timeout less Redis's timer tick; a
// read timeout too short for that makes waits use typed commands.
func TestBlockBudget(t *testing.T) {
	for rt, want := range map[time.Duration]time.Duration{
		-1:                     MaxBlock,
		0:                      MaxBlock,
		3 * time.Second:        MaxBlock,
		400 * time.Millisecond: 250 * time.Millisecond,
		160 * time.Millisecond: 0,
		90 * time.Millisecond:  0,
	} {
		if got := blockBudget(rt); got != want {
			t.Errorf("blockBudget(%v) = %v, want %v", rt, got, want)
		}
	}
}

// replyError is an error reply, as go-redis returns them.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// Replies that say a call did not run are told from the others.
func TestDidNotRun(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{replyError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{replyError("MOVED 3999 127.0.0.1:6381"), true},
		{replyError("ASK 3999 127.0.0.1:6381"), true},
		{replyError("CLUSTERDOWN The cluster is down"), true},
		{replyError("READONLY You can't write against a read only replica."), true},
		{replyError("LOADING Redis is loading the dataset in memory"), true},
		{replyError("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{replyError("NOSCRIPT No matching script"), false},
		{errors.New("MOVED 3999 127.0.0.1:6381"), false}, // not a reply
		{context.DeadlineExceeded, false},
	} {
		if got := didNotRun(c.err); got != c.want {
			t.Errorf("didNotRun(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}
