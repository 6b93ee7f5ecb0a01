package contestants

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

func TestAsynq(t *testing.T) {
	exerciseContestant(t, "asynq", 30*time.Second, 0)
}

// exerciseContestant runs the registered contestant name against a fresh
// redis-server: 200 items due over about a second (half through OfferBatch
// when the contestant has it), plus items canceled right after offering
// when it is a Canceler, each value padded with pad bytes (SetPadding).
// Every item must arrive exactly once, within deadline, and no canceled
// item may arrive.
func exerciseContestant(t *testing.T, name string, deadline time.Duration, pad int) {
	t.Helper()
	addr := startTestRedisServer(t)
	c := New(name)
	if c == nil {
		t.Fatalf("contestant %q not registered", name)
	}
	if c.Name() != name {
		t.Fatalf("Name() = %q, want %q", c.Name(), name)
	}
	t.Logf("Settings(): %s", c.Settings())
	c.SetPadding(pad)

	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := c.Setup(ctx, addr); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()

	const items = 200
	var (
		mu      sync.Mutex
		counts  = map[int]int{}
		arrival = map[int]time.Time{}
		total   int
		allSeen = make(chan struct{})
		lastAt  time.Time
	)
	if err := c.Consume(ctx, func(id int) {
		mu.Lock()
		defer mu.Unlock()
		counts[id]++
		if id < items && counts[id] == 1 {
			arrival[id] = time.Now()
			total++
			if total == items {
				lastAt = time.Now()
				close(allSeen)
			}
		}
	}); err != nil {
		t.Fatalf("Consume: %v", err)
	}

	start := time.Now()
	dueOf := func(id int) time.Time { return start.Add(time.Duration(id) * 5 * time.Millisecond) } // 0..995ms
	due := make(map[int]time.Time, items)                                                          // as offered
	batcher, hasBatch := c.(BatchOfferer)
	singles := items
	if hasBatch {
		singles = items / 2
	}
	var wg sync.WaitGroup
	errs := make(chan error, items)
	for w := range 8 {
		wg.Go(func() {
			for id := w; id < singles; id += 8 {
				mu.Lock()
				due[id] = dueOf(id)
				mu.Unlock()
				if err := c.Offer(ctx, id, dueOf(id)); err != nil {
					errs <- fmt.Errorf("Offer(%d): %w", id, err)
				}
			}
		})
	}
	if hasBatch {
		const batch = 25
		for first := singles; first < items; first += batch {
			ids := make([]int, 0, batch)
			for id := first; id < first+batch && id < items; id++ {
				ids = append(ids, id)
				mu.Lock()
				due[id] = dueOf(first)
				mu.Unlock()
			}
			if err := batcher.OfferBatch(ctx, ids, dueOf(first)); err != nil {
				errs <- fmt.Errorf("OfferBatch(%v): %w", ids, err)
			}
		}
	}

	// Canceled items fall due a second after they are offered, so that a
	// loaded machine still cancels them before they are due, and the check
	// below waits until a second past that, so they would have been
	// delivered had the cancel not worked.
	var canceled []int
	var cancelDue time.Time
	if canceler, ok := c.(Canceler); ok {
		for id := 1000; id < 1010; id++ {
			cancelDue = time.Now().Add(time.Second)
			if err := c.Offer(ctx, id, cancelDue); err != nil {
				t.Fatalf("Offer(%d): %v", id, err)
			}
			if err := canceler.Cancel(ctx, id); err != nil {
				t.Fatalf("Cancel(%d): %v", id, err)
			}
			canceled = append(canceled, id)
		}
	} else {
		t.Logf("%s has no Cancel", name)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	offered := time.Since(start)

	select {
	case <-allSeen:
	case <-ctx.Done():
		mu.Lock()
		t.Fatalf("only %d of %d items arrived within %v", total, items, deadline)
	}
	// Let duplicates and canceled items show up.
	time.Sleep(max(time.Second, time.Until(cancelDue.Add(time.Second))))
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	closed = true

	mu.Lock()
	defer mu.Unlock()
	for id := range items {
		if counts[id] != 1 {
			t.Errorf("item %d arrived %d times", id, counts[id])
		}
	}
	for _, id := range canceled {
		if counts[id] != 0 {
			t.Errorf("canceled item %d arrived %d times", id, counts[id])
		}
	}
	for id, n := range counts {
		if id >= items && (id < 1000 || id >= 1010) {
			t.Errorf("unexpected id %d arrived %d times", id, n)
		}
	}
	// Lateness is reported, not checked: it is what the benchmark measures.
	var lastDue time.Time
	var early, late time.Duration
	for id, at := range arrival {
		if due[id].After(lastDue) {
			lastDue = due[id]
		}
		early = max(early, due[id].Sub(at))
		late = max(late, at.Sub(due[id]))
	}
	t.Logf("offered %d items (+%d canceled) in %v; all arrived %v after start (last due %v); "+
		"latest arrival %v after due, earliest %v before due",
		items, len(canceled), offered.Round(time.Millisecond), lastAt.Sub(start).Round(time.Millisecond),
		lastDue.Sub(start).Round(time.Millisecond), late.Round(time.Millisecond), early.Round(time.Millisecond))
}

// startTestRedisServer starts redis-server on a free loopback port for the
// test and returns its address; the server is killed when the test ends.
func startTestRedisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found on PATH: install it (apt-get install redis-server) or run ../scripts/test.sh, which does")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	for wait := time.Now().Add(5 * time.Second); ; {
		if pingRedis(addr) == nil {
			return addr
		}
		if time.Now().After(wait) {
			t.Fatalf("redis-server on %s did not answer PING: %v", addr, pingRedis(addr))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func pingRedis(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line != "+PONG\r\n" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
