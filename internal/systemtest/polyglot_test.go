package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/redistest"
)

// polyValue is the value the producers of other languages offer, as JSON.
type polyValue struct {
	N    int    `json:"n"`
	Text string `json:"text"`
}

// polyOffered is what a producer script reports it offered.
type polyOffered struct {
	StartMs int64 `json:"start_ms"`
	Items   []struct {
		ID      string            `json:"id"`
		Value   polyValue         `json:"value"`
		Headers map[string]string `json:"headers"`
		DelayMs int64             `json:"delay_ms"`
	} `json:"items"`
	// Expired are IDs offered ready with a TTL of 1 ms: past it before
	// the consumer starts.
	Expired          []string `json:"expired"`
	DuplicateRefused bool     `json:"duplicate_refused"`
	ReplyLost        bool     `json:"reply_lost"`
}

// polyDelivery is one item a Go consumer got.
type polyDelivery struct {
	id      string
	value   polyValue
	headers map[string]string
	due     time.Time
	arrived time.Time
}

// repoDir is the repository's root.
func repoDir(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// python returns a python3 that imports redis-py: Debian's (python3-redis)
// first. The test fails without one; scripts/test.sh installs it.
func python(t *testing.T) string {
	t.Helper()
	for _, exe := range []string{"/usr/bin/python3", "python3"} {
		if err := exec.Command(exe, "-c", "import redis").Run(); err == nil {
			return exe
		}
	}
	t.Fatal("no python3 with redis-py (Debian: apt-get install python3-redis; scripts/test.sh does)")
	return ""
}

// seedAddr is an address of rdb's server (a master of a cluster), and
// whether it is a cluster.
func seedAddr(t *testing.T, rdb redis.UniversalClient) (string, bool) {
	t.Helper()
	switch c := rdb.(type) {
	case *redis.Client:
		return c.Options().Addr, false
	case *redis.ClusterClient:
		return c.Options().Addrs[0], true
	}
	t.Fatalf("unexpected client %T", rdb)
	return "", false
}

// consumePoly consumes name with the JSON codec, one item at a time, until
// want items came and then a second more (to see any duplicate).
func consumePoly(t *testing.T, rdb redis.UniversalClient, name string, want int) []polyDelivery {
	t.Helper()
	q := blocking.New[polyValue](rdb, name, blocking.WithCodec(codec.JSON()))
	defer q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	var got []polyDelivery
	all := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(ctx, func(_ context.Context, d *blocking.Delivery[polyValue]) error {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, polyDelivery{id: d.ID, value: d.Value, headers: d.Headers, due: d.DueAt, arrived: time.Now()})
			if len(got) == want {
				close(all)
			}
			return nil
		}, blocking.WithConcurrency(1))
	}()
	select {
	case <-all:
		time.Sleep(time.Second)
	case <-ctx.Done():
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	return got
}

// checkPoly checks that the Go consumer got exactly what the producer
// offered: values, IDs and headers as sent, each once, never before its
// due time, in due order, with due times no earlier than the offer's delay.
func checkPoly(t *testing.T, offered polyOffered, got []polyDelivery) {
	t.Helper()
	if !offered.DuplicateRefused {
		t.Error("the producer was not refused a second offer of a pending ID")
	}
	if !offered.ReplyLost {
		t.Error("the producer's reply was never lost: the resend was not exercised")
	}
	byID := map[string]polyDelivery{}
	for _, d := range got {
		if _, ok := byID[d.id]; ok {
			t.Errorf("item %s delivered twice", d.id)
		}
		byID[d.id] = d
	}
	if len(got) != len(offered.Items) {
		t.Errorf("%d deliveries, want %d (one per item offered)", len(got), len(offered.Items))
	}
	start := time.UnixMilli(offered.StartMs)
	for _, it := range offered.Items {
		d, ok := byID[it.ID]
		if !ok {
			t.Errorf("item %s was not delivered", it.ID)
			continue
		}
		if d.value != it.Value {
			t.Errorf("item %s: value %+v, want %+v", it.ID, d.value, it.Value)
		}
		if !maps.Equal(d.headers, it.Headers) {
			t.Errorf("item %s: headers %v, want %v", it.ID, d.headers, it.Headers)
		}
		// Due times are Unix ms of the server's clock, on this machine.
		if earliest := start.Add(time.Duration(it.DelayMs)*time.Millisecond - 2*time.Millisecond); d.due.Before(earliest) {
			t.Errorf("item %s due at %v, before its offer plus its delay (%v)", it.ID, d.due, earliest)
		}
		if d.arrived.Before(d.due) {
			t.Errorf("item %s arrived at %v, before it was due (%v)", it.ID, d.arrived, d.due)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].due.Before(got[i-1].due) {
			t.Errorf("item %s (due %v) delivered after %s (due %v)", got[i].id, got[i].due, got[i-1].id, got[i-1].due)
		}
	}
}

// runProducer runs a producer script of another language (exe, then
// script's args) against rdb's queue name and returns what it offered.
func runProducer(t *testing.T, rdb redis.UniversalClient, name, exe string, script ...string) polyOffered {
	t.Helper()
	addr, cluster := seedAddr(t, rdb)
	args := append(slices.Clone(script), addr, name)
	if cluster {
		args = append(args, "--cluster")
	}
	cmd := exec.Command(exe, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", exe, args, err, stderr.String())
	}
	var offered polyOffered
	if err := json.Unmarshal(out, &offered); err != nil {
		t.Fatalf("producer output %q: %v", out, err)
	}
	return offered
}

// Items offered by the Python producer (clients/python) are consumed by a
// Go Consume with the JSON codec.
func TestPythonProducerToGoConsumer(t *testing.T) {
	exe := python(t)
	script := filepath.Join(repoDir(t), "clients", "python", "tests", "crossoffer.py")
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		offered := runProducer(t, rdb, name, exe, script)
		checkPoly(t, offered, consumePoly(t, rdb, name, len(offered.Items)))
		checkExpired(t, rdb, name, offered.Expired)
	})
}

// Items offered by the Node producer (clients/node) are consumed by a Go
// Consume with the JSON codec.
func TestNodeProducerToGoConsumer(t *testing.T) {
	dir := filepath.Join(repoDir(t), "clients", "node")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "ioredis")); err != nil {
		t.Fatalf("the Node producer's dependencies are not installed (cd clients/node && npm ci; scripts/test.sh does): %v", err)
	}
	exe, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node is not on PATH (Debian: apt-get install nodejs; scripts/test.sh does): %v", err)
	}
	script := filepath.Join(dir, "test", "crossoffer.js")
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.QueueName(t)
		offered := runProducer(t, rdb, name, exe, script)
		checkPoly(t, offered, consumePoly(t, rdb, name, len(offered.Items)))
		checkExpired(t, rdb, name, offered.Expired)
	})
}

// checkExpired checks that the items a producer offered with a TTL that
// ran out before the consumer started are in the dead letters, as
// expired (checkPoly saw that they were not delivered: every delivery
// was an item of Items).
func checkExpired(t *testing.T, rdb redis.UniversalClient, name string, ids []string) {
	t.Helper()
	if len(ids) == 0 {
		t.Fatal("the producer offered no item with a TTL that runs out")
	}
	q := blocking.New[polyValue](rdb, name, blocking.WithCodec(codec.JSON()))
	defer q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dead, err := q.DeadLetters().Peek(ctx, blocking.MaxPage)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, it := range dead {
		reasons[it.ID] = it.Headers[blocking.HeaderError]
	}
	for _, id := range ids {
		if r, ok := reasons[id]; !ok || r != "expired" {
			t.Errorf("item %s: in the dead letters %v with reason %q, want there as expired (dead letters: %v)", id, ok, r, reasons)
		}
	}
	if len(dead) != len(ids) {
		t.Errorf("%d dead letters, want %d", len(dead), len(ids))
	}
}
