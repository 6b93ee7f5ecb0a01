package inspect_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// lengthPastTheBytes is a msgpack array header claiming 2^32-1 elements,
// in 5 bytes.
const lengthPastTheBytes = "\xdd\xff\xff\xff\xff"

// TestCorruptMsgpackChild is the child side of TestCorruptMsgpackIsADecodeError,
// run only when the parent sets the variables: it lists and gets the
// queue's items and checks them.
func TestCorruptMsgpackChild(t *testing.T) {
	name := os.Getenv("REDELAY_CHILD_QUEUE")
	if name == "" {
		return // not a child: nothing to do
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDELAY_CHILD_ADDRS")})
	defer rdb.Close()
	ctx := context.Background()
	in := inspect.New(rdb)
	items, err := in.List(ctx, name, inspect.Ready, 0, 10)
	if err != nil || len(items) != 3 {
		t.Fatalf("List = %+v, %v; want 3 items", items, err)
	}
	for _, it := range items {
		switch {
		case it.ID == "corrupt":
			if it.Value != nil || !strings.HasPrefix(it.DecodeError, "msgpack: ") || string(it.Payload) != lengthPastTheBytes {
				t.Errorf("corrupt item = %+v", it)
			}
		case it.DecodeError != "" || it.Value == nil:
			t.Errorf("good item = %+v", it)
		}
	}
	it, err := in.Get(ctx, name, "corrupt")
	if err != nil || it.Value != nil || !strings.HasPrefix(it.DecodeError, "msgpack: ") {
		t.Errorf("Get = %+v, %v", it, err)
	}
}

// A msgpack payload whose array header claims more elements than its bytes
// hold is listed with a DecodeError, beside the items that decode (before:
// the generic decoder made the slice first, 2^32-1 elements from 5 bytes,
// and List and Get killed the process, the CLI or the dashboard, with a
// fatal out of memory). The inspector runs in a child process, the one way
// to see it survive.
func TestCorruptMsgpackIsADecodeError(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	name := redistest.QueueName(t)
	q := announced[Order](t, rdb, name, codec.Msgpack())
	if _, err := q.Offer(ctx, order("good-1"), blocking.WithID("good-1")); err != nil {
		t.Fatal(err)
	}
	raw := blocking.New[string](rdb, name, blocking.WithCodec(codec.Raw()))
	defer raw.Close()
	if _, err := raw.Offer(ctx, lengthPastTheBytes, blocking.WithID("corrupt")); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Offer(ctx, order("good-2"), blocking.WithID("good-2")); err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := redistest.Rerun(cctx, "TestCorruptMsgpackChild", "REDELAY_CHILD_ADDRS="+rdb.Options().Addr, "REDELAY_CHILD_QUEUE="+name)
	out, err := cmd.CombinedOutput()
	if err != nil {
		lines := strings.SplitN(string(out), "\n", 13)
		t.Fatalf("the child did not exit cleanly: %v\n%s", err, strings.Join(lines[:min(12, len(lines))], "\n"))
	}
}
