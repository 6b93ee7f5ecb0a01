package store_test

import (
	"context"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// An offer call records its outcome under its lane: a second run returns
// the recorded outcome and stores nothing, and a copy of an older call of
// the lane that arrives after a newer one is refused and changes nothing,
// not even the lane's record.
func TestOfferCallReplayAndStaleCopy(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Standalone(t)
	k := redistest.KeysOf(redistest.QueueName(t))
	q := store.New(rdb).Partition(k)
	item := func(id string) store.OfferItem {
		env := (&envelope.Envelope{ID: id, Payload: []byte("v")}).Marshal()
		return store.OfferItem{ID: id, Env: env, Mode: 'd', US: time.Hour.Microseconds()}
	}
	pending := func() int64 {
		n, err := rdb.ZCard(ctx, k.Delayed).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	got, err := q.Offer(ctx, "L", "2", 0, []store.OfferItem{item("a")})
	if err != nil || len(got) != 1 || got[0] != lua.OfferPending {
		t.Fatalf("first run = %v, %v; want [%d]", got, err, lua.OfferPending)
	}
	// The same call again (a resend after a lost reply): its recorded
	// outcome, not "duplicate", and nothing more stored.
	got, err = q.Offer(ctx, "L", "2", 0, []store.OfferItem{item("a")})
	if err != nil || len(got) != 1 || got[0] != lua.OfferPending {
		t.Fatalf("second run = %v, %v; want the recorded [%d]", got, err, lua.OfferPending)
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d pending after a second run, want 1", n)
	}
	// A copy of an older call of the lane: refused, nothing stored.
	_, err = q.Offer(ctx, "L", "1", 0, []store.OfferItem{item("b")})
	if err == nil || !strings.Contains(err.Error(), "STALE") {
		t.Fatalf("stale copy = %v, want a STALE error", err)
	}
	if n := pending(); n != 1 {
		t.Fatalf("%d pending after a stale copy, want 1", n)
	}
	// The lane's record is still the newer call's: it replays as before.
	got, err = q.Offer(ctx, "L", "2", 0, []store.OfferItem{item("a")})
	if err != nil || len(got) != 1 || got[0] != lua.OfferPending {
		t.Fatalf("run after the stale copy = %v, %v; want the recorded [%d]", got, err, lua.OfferPending)
	}
	// The next call of the lane runs.
	got, err = q.Offer(ctx, "L", "3", 0, []store.OfferItem{item("b"), item("a")})
	if err != nil || len(got) != 2 || got[0] != lua.OfferPending || got[1] != lua.OfferDuplicate {
		t.Fatalf("next call = %v, %v; want [%d %d]", got, err, lua.OfferPending, lua.OfferDuplicate)
	}
	if n := pending(); n != 2 {
		t.Fatalf("%d pending, want 2", n)
	}
}

// Delayed-set scores are the server's clock plus each delay, to the
// microsecond: Unix µs have 16 digits, and a number written with Lua's own
// 14 significant digits would round them to 100 µs.
func TestOfferScoresExact(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.Standalone(t)
	k := redistest.KeysOf(redistest.QueueName(t))
	q := store.New(rdb).Partition(k)
	var items []store.OfferItem
	for i := range 5 {
		id := string(rune('a' + i))
		env := (&envelope.Envelope{ID: id, Payload: []byte("v")}).Marshal()
		items = append(items, store.OfferItem{ID: id, Env: env, Mode: 'd', US: time.Hour.Microseconds() + int64(i)})
	}
	if _, err := q.Offer(ctx, "L", "1", 0, items); err != nil {
		t.Fatal(err)
	}
	zs, err := rdb.ZRangeWithScores(ctx, k.Delayed, 0, -1).Result()
	if err != nil || len(zs) != len(items) {
		t.Fatalf("delayed set = %v, %v; want %d members", zs, err, len(items))
	}
	for i := 1; i < len(zs); i++ {
		if d := zs[i].Score - zs[0].Score; d != float64(i) {
			t.Fatalf("score %d is %.0f µs after the first, want %d (scores %v)", i, d, i, zs)
		}
	}
}

// A plain delayed offer of a generated ID ('D') behind the earliest pending
// item runs only what it needs: its lane's GET and SET, TIME, the delayed
// set's head, INCRBY, ZADD and HSET; no duplicate lookup and no read of the
// retry set. An ID of the caller's ('d') adds the lookup; an item that may
// go ahead of every pending one reads the retry set's head too, and still
// keeps its place behind an earlier retry.
func TestPlainOfferCommands(t *testing.T) {
	ctx := context.Background()
	rdb := redistest.StartServer(t).Client(t)
	k := redistest.KeysOf(redistest.QueueName(t))
	q := store.New(rdb).Partition(k)
	if err := lua.Offer.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	item := func(id string, mode byte, d time.Duration) store.OfferItem {
		env := (&envelope.Envelope{ID: id, Payload: []byte("v")}).Marshal()
		return store.OfferItem{ID: id, Env: env, Mode: mode, US: d.Microseconds()}
	}
	nonce := 0
	offer := func(it store.OfferItem) (store.OfferStatus, map[string]int64) {
		t.Helper()
		before := redistest.ReadCommandStats(t, rdb)
		nonce++
		got, err := q.Offer(ctx, "L", strconv.Itoa(nonce), 0, []store.OfferItem{it})
		after := redistest.ReadCommandStats(t, rdb)
		if err != nil || len(got) != 1 {
			t.Fatalf("offer %s = %v, %v", it.ID, got, err)
		}
		calls, _ := redistest.CommandCalls(before, after)
		delete(calls, "info")
		return got[0], calls
	}
	if st, _ := offer(item("head", 'D', time.Minute)); st != lua.OfferPending {
		t.Fatalf("head: status %d", st)
	}
	plain := map[string]int64{"evalsha": 1, "get": 1, "set": 1, "time": 1, "zrange": 1, "incrby": 1, "zadd": 1, "hset": 1}
	st, calls := offer(item("plain", 'D', time.Hour))
	if st != lua.OfferPending || !maps.Equal(calls, plain) {
		t.Fatalf("plain delayed offer: status %d, commands %v; want %v", st, calls, plain)
	}
	st, calls = offer(item("mine", 'd', time.Hour))
	if st != lua.OfferPending || calls["hmget"] != 1 || calls["zrange"] != 1 {
		t.Fatalf("offer of the caller's ID: status %d, commands %v; want one HMGET and one ZRANGE", st, calls)
	}
	// A retry due before everything.
	if err := rdb.ZAdd(ctx, k.Retry, redis.Z{Score: 1, Member: "r"}).Err(); err != nil {
		t.Fatal(err)
	}
	// Earlier than the delayed set's head but not the retry's: no wake-up.
	st, calls = offer(item("early", 'D', time.Second))
	if st != lua.OfferPending || calls["zrange"] != 2 || calls["publish"] != 0 {
		t.Fatalf("item before the delayed head, after a retry: status %d, commands %v; want two heads read, no PUBLISH", st, calls)
	}
	// An item due now waits behind it.
	st, calls = offer(item("now", 'D', 0))
	if st != lua.OfferPending || calls["zrange"] != 2 {
		t.Fatalf("item due now behind a retry: status %d, commands %v; want pending (%d), the retry set read", st, calls, lua.OfferPending)
	}
	// Without the retry and the item due now, an item due before the
	// rest is the new earliest.
	if err := rdb.Del(ctx, k.Retry).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ZPopMin(ctx, k.Delayed).Err(); err != nil {
		t.Fatal(err)
	}
	st, calls = offer(item("earliest", 'D', time.Millisecond))
	if st != lua.OfferPending || calls["publish"] != 1 {
		t.Fatalf("new earliest item: status %d, commands %v; want one PUBLISH", st, calls)
	}
}
