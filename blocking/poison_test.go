package blocking_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/redistest"
)

// stamped is the value of the poison tests' queues.
type stamped struct {
	At    time.Time
	Items []int64
}

// poisons are msgpack payloads the codec cannot decode into a stamped, and
// what the reason of their dead letter says.
var poisons = []struct {
	name    string
	payload func(t *testing.T) []byte
	reason  string
}{
	// Written from a struct{ At *time.Time } with At nil: msgpack panics
	// ("reflect: call of reflect.Value.IsNil on struct Value").
	{"codec panics", func(t *testing.T) []byte {
		p, err := codec.Msgpack().Marshal(struct{ At *time.Time }{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, "panic"},
	// An array header claiming 2^32-1 elements, in 5 bytes: msgpack makes
	// the slice before reading them (a fatal out of memory).
	{"length past the bytes", func(*testing.T) []byte {
		return []byte("\x81\xa5Items\xdd\xff\xff\xff\xff")
	}, "EOF"},
}

// TestPoisonChild is the child side of TestPoisonIsDeadLettered, run only
// when the parent sets the variables: it gets one item of the queue with
// REDELAY_POISON_OP (receive, take or consume), prints it and exits.
func TestPoisonChild(t *testing.T) {
	op := os.Getenv("REDELAY_POISON_OP")
	if op == "" {
		return // not a child: nothing to do
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDELAY_CHILD_ADDRS")})
	defer rdb.Close()
	q := blocking.New[stamped](rdb, os.Getenv("REDELAY_CHILD_QUEUE"), blocking.WithMaxAttempts(1))
	defer q.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got stamped
	switch op {
	case "receive":
		d, err := q.Receive(ctx)
		if err != nil {
			t.Fatalf("Receive: %v", err)
		}
		if err := d.Ack(ctx); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		got = d.Value
	case "take":
		v, err := q.Take(ctx)
		if err != nil {
			t.Fatalf("Take: %v", err)
		}
		got = v
	case "consume":
		// Consume runs until it handled the good item and dead-lettered
		// the poison, in whichever order.
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		handled := make(chan stamped, 1)
		done := make(chan error, 1)
		go func() {
			done <- q.Consume(cctx, func(_ context.Context, d *blocking.Delivery[stamped]) error {
				handled <- d.Value
				return nil
			})
		}()
		got = <-handled
		dead := redistest.KeysOf(os.Getenv("REDELAY_CHILD_QUEUE")).DeadReady
		for rdb.LLen(ctx, dead).Val() == 0 && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Consume = %v", err)
		}
	default:
		t.Fatalf("REDELAY_POISON_OP=%q", op)
	}
	fmt.Printf("GOT %v\n", got.Items)
}

// A payload the codec cannot decode without crashing (it panics, or it
// claims a length past its bytes and makes the codec allocate tens of GB)
// is failed by Receive, Take and Consume like any payload the codec
// refuses, dead-lettered with the reason after its last attempt (here the
// first), and they go on to the next item (before: the panic went up
// through Receive and Take, the item lost by Take; Consume panicked in its
// receiver goroutine and killed the process; the length killed the
// process with a fatal out of memory; each again for every consumer the
// item came back to). The consumer runs in a child process, the one
// way to see it survive.
func TestPoisonIsDeadLettered(t *testing.T) {
	t.Parallel()
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	for _, p := range poisons {
		for _, op := range []string{"receive", "take", "consume"} {
			t.Run(p.name+"/"+op, func(t *testing.T) {
				t.Parallel()
				name := redistest.QueueName(t)
				pushRaw(t, rdb, name, (&envelope.Envelope{ID: "poison", Payload: p.payload(t)}).Marshal())
				q := blocking.New[stamped](rdb, name)
				defer q.Close()
				if _, err := q.Offer(ctx, stamped{At: time.Unix(1, 0), Items: []int64{1, 2}}); err != nil {
					t.Fatal(err)
				}

				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				defer cancel()
				cmd := redistest.Rerun(cctx, "TestPoisonChild", "REDELAY_POISON_OP="+op,
					"REDELAY_CHILD_ADDRS="+rdb.Options().Addr, "REDELAY_CHILD_QUEUE="+name)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("the %s child did not exit cleanly: %v\n%s", op, err, firstLines(string(out), 12))
				}
				if !strings.Contains(string(out), "GOT [1 2]\n") {
					t.Fatalf("the %s child did not get the good item:\n%s", op, out)
				}

				k := redistest.KeysOf(name)
				dead, err := rdb.LRange(ctx, k.DeadReady, 0, -1).Result()
				if err != nil || len(dead) != 1 {
					t.Fatalf("dead letters = %q, %v; want the poison\n%s", dead, err, out)
				}
				e, err := envelope.Unmarshal([]byte(dead[0]))
				if err != nil || e.ID != "poison" || !strings.Contains(e.Headers[blocking.HeaderError], p.reason) ||
					!strings.Contains(e.Headers[blocking.HeaderError], "decode with msgpack codec") {
					t.Fatalf("dead letter %+v, %v; want the poison, its reason saying %q", e, err, p.reason)
				}
				for _, key := range []string{"ready", "inflight", "retry"} {
					if n := keyLen(t, rdb, name, key); n != 0 {
						t.Errorf("%s holds %d items, want none", key, n)
					}
				}
			})
		}
	}
}

// firstLines returns the first n lines of s (a crash's goroutine dump is
// long).
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
