package seedtest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// OfferAnnounced offers v to the queue name with codec c, due in an hour
// with the ID id, through a delayed queue that transfers and so announces
// the queue with its codec, and returns name once the codec is recorded
// (so that the inspector decodes the queue's values). The queue's handles
// are closed when it returns.
func OfferAnnounced(t testing.TB, rdb redis.UniversalClient, name string, c codec.Codec, id string, v any) string {
	t.Helper()
	q := blocking.New[any](rdb, name, blocking.WithCodec(c))
	defer q.Close()
	dq := delayed.New(q)
	defer dq.Close()
	if _, err := dq.Offer(context.Background(), v, time.Hour, delayed.WithID(id)); err != nil {
		t.Fatal(err)
	}
	WaitCodec(t, rdb, name, c.Name())
	return name
}

// WaitCodec waits until the codec of the queue name is recorded as want,
// or as any codec when want is "", as a process that consumes or
// transfers the queue records it.
func WaitCodec(t testing.TB, rdb redis.UniversalClient, name, want string) {
	t.Helper()
	redistest.WaitFor(t, 10*time.Second, "the queue's codec recorded", func() bool {
		got := rdb.HGet(context.Background(), redistest.KeysOf(name).Meta, "codec").Val()
		return got != "" && (want == "" || got == want)
	})
}
