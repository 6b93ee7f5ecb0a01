package inspect_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// renamed is the JSON codec under another name: a custom codec, which the
// inspector cannot decode.
type renamed struct{ codec.Codec }

func (renamed) Name() string { return "gob" }

// announced returns a queue called name with codec c, announced (its codec
// recorded) as a process that transfers it does.
func announced[T any](t *testing.T, rdb redis.UniversalClient, name string, c codec.Codec) *blocking.Queue[T] {
	t.Helper()
	q := blocking.New[T](rdb, name, blocking.WithCodec(c))
	dq := delayed.New(q) // transfers: announces the queue
	t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
	seedtest.WaitCodec(t, rdb, name, c.Name())
	return q
}

// only returns the one item of state st, failing otherwise.
func only(t *testing.T, in *inspect.Inspector, name string, st inspect.State) inspect.Item {
	t.Helper()
	items, err := in.List(context.Background(), name, st, 0, 10)
	if err != nil || len(items) != 1 {
		t.Fatalf("List(%s) = %+v, %v", st, items, err)
	}
	return items[0]
}

func TestDecoding(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		in := inspect.New(rdb)
		offer := func(q *blocking.Queue[string], v string) {
			t.Helper()
			if _, err := q.Offer(ctx, v); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("raw", func(t *testing.T) {
			name := redistest.QueueName(t)
			q := announced[string](t, rdb, name, codec.Raw())
			offer(q, "héllo")
			offer(q, "\xff\xfe")
			items, err := in.List(ctx, name, inspect.Ready, 0, 10)
			if err != nil || len(items) != 2 {
				t.Fatalf("List = %+v, %v", items, err)
			}
			if items[0].Value != "héllo" || items[0].DecodeError != "" {
				t.Errorf("text = %+v", items[0])
			}
			if items[1].Value != nil || items[1].DecodeError != "" || string(items[1].Payload) != "\xff\xfe" {
				t.Errorf("binary = %+v", items[1])
			}
		})
		t.Run("custom codec", func(t *testing.T) {
			name := redistest.QueueName(t)
			offer(announced[string](t, rdb, name, renamed{codec.JSON()}), "x")
			it := only(t, in, name, inspect.Ready)
			if it.Value != nil || !strings.Contains(it.DecodeError, `codec "gob"`) || string(it.Payload) != `"x"` || it.ID == "" {
				t.Errorf("item = %+v", it)
			}
		})
		t.Run("no codec recorded", func(t *testing.T) {
			name := redistest.QueueName(t)
			offer(blocking.New[string](rdb, name), "x")                                       // a producer records its codec...
			if err := rdb.HDel(ctx, redistest.KeysOf(name).Meta, "codec").Err(); err != nil { // ...until it is lost
				t.Fatal(err)
			}
			it := only(t, in, name, inspect.Ready)
			if it.Value != nil || !strings.Contains(it.DecodeError, "not recorded") || it.ID == "" {
				t.Errorf("item = %+v", it)
			}
		})
		t.Run("not msgpack", func(t *testing.T) {
			name := redistest.QueueName(t)
			announced[Order](t, rdb, name, codec.Msgpack())
			offer(blocking.New[string](rdb, name, blocking.WithCodec(codec.Raw())), "\xc1")
			it := only(t, in, name, inspect.Ready)
			if it.Value != nil || !strings.HasPrefix(it.DecodeError, "msgpack: ") || string(it.Payload) != "\xc1" {
				t.Errorf("item = %+v", it)
			}
		})
		t.Run("not an envelope", func(t *testing.T) {
			name := redistest.QueueName(t)
			k := redistest.KeysOf(name)
			if err := rdb.LPush(ctx, k.Ready, "garbage").Err(); err != nil {
				t.Fatal(err)
			}
			if err := rdb.LPush(ctx, k.DeadReady, "").Err(); err != nil {
				t.Fatal(err)
			}
			for _, st := range []inspect.State{inspect.Ready, inspect.Dead} {
				it := only(t, in, name, st)
				if it.ID != "" || it.Value != nil || !strings.Contains(it.DecodeError, "not an envelope") || it.State != st {
					t.Errorf("%s item = %+v", st, it)
				}
			}
			if it := only(t, in, name, inspect.Ready); string(it.Payload) != "garbage" {
				t.Errorf("Payload = %q", it.Payload)
			}
			// It can be purged.
			if n, err := in.Purge(ctx, name, inspect.Dead); err != nil || n != 1 {
				t.Errorf("Purge = %d, %v", n, err)
			}
		})
	})
}
