package seedtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/redistest"
)

// OverdueSchedule moves the next tick of schedule sched of the queue name
// to a minute ago, as if no process had transferred the queue since: the
// schedule reads as overdue until a process that transfers the queue
// fires the tick. Only the tick's time changes.
func OverdueSchedule(t testing.TB, rdb redis.UniversalClient, name, sched string) {
	t.Helper()
	ctx := context.Background()
	key := redistest.KeysOf(name).Schedules
	raw, err := rdb.HGet(ctx, key, sched).Result()
	if err != nil {
		t.Fatalf("schedule %s of %s: %v", sched, name, err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(raw), &rec); err != nil {
		t.Fatalf("schedule %s of %s: %v", sched, name, err)
	}
	rec["next"] = time.Now().Add(-time.Minute).UnixMilli()
	rec["recent"] = nil
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, key, sched, b).Err(); err != nil {
		t.Fatal(err)
	}
}
