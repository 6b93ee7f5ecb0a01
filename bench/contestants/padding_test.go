package contestants

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestPaddingString(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 256} {
		p := padding(n)
		if len(p) != n {
			t.Errorf("len(padding(%d)) = %d", n, len(p))
		}
		if strings.ContainsAny(p, " :") {
			t.Errorf("padding(%d) contains a separator: %q", n, p)
		}
	}
}

// TestPadded runs every registered contestant with 256-byte padding: every
// item still arrives exactly once, by id, and cancels still find their
// item; and the padding is really stored (Redis memory per pending item
// grows by most of the padding at least: allocator size classes and table
// growth make the exact growth vary by a few dozen bytes).
func TestPadded(t *testing.T) {
	for _, name := range All() {
		t.Run(name, func(t *testing.T) {
			exerciseContestant(t, name, 60*time.Second, 256)
			plain := pendingBytes(t, name, 0)
			padded := pendingBytes(t, name, 256)
			t.Logf("Redis bytes per pending item: %.0f unpadded, %.0f with 256 bytes of padding", plain, padded)
			if padded-plain < 0.75*256 {
				t.Errorf("padding adds %.0f bytes per pending item, want at least 192 of its 256", padded-plain)
			}
		})
	}
}

// pendingBytes offers 8000 items due in an hour, padded with pad bytes, to
// a fresh server and returns the growth of used_memory less client buffers
// (mem_clients_normal, which moves with the connections' query buffers)
// and the script cache (used_memory_scripts: a script the contestant's
// background work loads during the measurement, about 17 KB, would add
// some 8 bytes per item) per item.
func pendingBytes(t *testing.T, name string, pad int) float64 {
	t.Helper()
	const n = 8000
	addr := startTestRedisServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := New(name)
	c.SetPadding(pad)
	if err := c.Setup(ctx, addr); err != nil {
		t.Fatalf("Setup: %v", err)
	}
	defer c.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	used := func() float64 {
		info, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		field := func(name string) float64 {
			for line := range strings.SplitSeq(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
					var f float64
					if _, err := fmt.Sscan(v, &f); err != nil {
						t.Fatal(err)
					}
					return f
				}
			}
			t.Fatalf("INFO memory has no %s", name)
			return 0
		}
		return field("used_memory") - field("mem_clients_normal") - field("used_memory_scripts")
	}
	// Warm up (scripts loaded, connections open) before measuring.
	if err := c.Offer(ctx, n, time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("Offer: %v", err)
	}
	before := used()
	due := time.Now().Add(time.Hour)
	for id := range n {
		if err := c.Offer(ctx, id, due); err != nil {
			t.Fatalf("Offer(%d): %v", id, err)
		}
	}
	return (used() - before) / n
}
