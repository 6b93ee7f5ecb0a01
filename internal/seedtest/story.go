package seedtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
)

// Story fills the queue name with one dead letter, "story",
// dead-lettered after three deliveries to a Consume whose handler failed
// with "boom 1", "boom 2" and "boom 3", and returns a time before it
// died. It fails t unless the dead letter is there within 15 s.
func Story(t testing.TB, rdb redis.UniversalClient, name string) time.Time {
	t.Helper()
	ctx := context.Background()
	q := blocking.New[string](rdb, name, blocking.WithMaxAttempts(3))
	t.Cleanup(func() { _ = q.Close() })
	if _, err := q.Offer(ctx, "v", blocking.WithID("story")); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Second)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[string]) error {
			return fmt.Errorf("boom %d", d.Attempt)
		}, blocking.WithBackoff(FastBackoff))
	}()
	defer func() { cancel(); <-done }()
	redistest.WaitFor(t, 15*time.Second, "the story's dead letter", func() bool {
		st, err := q.Stats(ctx)
		return err == nil && st.Dead == 1
	})
	return before
}
