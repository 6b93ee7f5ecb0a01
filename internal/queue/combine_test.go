package queue

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/store"
)

// testCore opens the core of a new queue on rdb, closed when the test ends.
func testCore(t *testing.T, rdb redis.UniversalClient) *part {
	t.Helper()
	c := New(rdb, redistest.QueueName(t), Config{Codec: codec.Msgpack()}, nil)
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// proxiedCore opens the core of a new queue through a proxy to the shared
// server (direct), closed when the test ends. Its client has one
// connection, so that the reply a HoldNextReply holds is the next
// command's: with more, on a loaded machine, a chunk of another
// connection was held now and then, and the call the test held went
// through (one run in ten of TestReceiveLeftWhileSentGivesBack with three
// busy loops on two cores; none in 900 with one connection).
func proxiedCore(t *testing.T) (direct *redis.Client, p *redistest.Proxy, rdb *redis.Client, c *part) {
	t.Helper()
	direct = redistest.Standalone(t)
	p = redistest.StartProxy(t, direct.Options().Addr)
	rdb = p.Client(t, func(o *redis.Options) { o.PoolSize = 1 })
	return direct, p, rdb, testCore(t, rdb)
}

// hourItem returns an item due in an hour, under id.
func hourItem(t *testing.T, c *part, id string) store.OfferItem {
	t.Helper()
	env, err := c.Encode(id, id, nil, nil, 0, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	return store.OfferItem{ID: id, Env: env, Mode: 'd', US: time.Hour.Microseconds()}
}

// senders returns how many senders run, a caller sending its own offer
// included.
func senders(c *part) int {
	c.offers.mu.Lock()
	defer c.offers.mu.Unlock()
	return c.offers.sending
}

// pending returns how many items the queue's delayed set holds.
func pendingItems(t *testing.T, rdb redis.UniversalClient, c *part) int64 {
	t.Helper()
	n, err := rdb.ZCard(context.Background(), c.Keys.Delayed).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A lone offer is sent from its caller's goroutine, whatever its context:
// no sender is started (one would linger for senderLinger).
func TestLoneOfferSentByCaller(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		c := testCore(t, rdb)
		st, err := c.Offer(context.Background(), hourItem(t, c, "own"))
		if err != nil || st != lua.OfferPending {
			t.Fatalf("Offer = %d, %v", st, err)
		}
		if n := senders(c); n != 0 {
			t.Fatalf("%d senders after a lone offer that cannot be cancelled, want 0", n)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if st, err := c.Offer(ctx, hourItem(t, c, "cancellable")); err != nil || st != lua.OfferPending {
			t.Fatalf("Offer = %d, %v", st, err)
		}
		if n := senders(c); n != 0 {
			t.Fatalf("%d senders after a lone offer that can be cancelled, want 0", n)
		}
		if n := pendingItems(t, rdb, c); n != 2 {
			t.Fatalf("%d items pending, want 2", n)
		}
	})
}

// ownOffer starts, through a proxy, an offer that its caller sends itself
// and whose reply the proxy holds. It returns once the server has stored
// the item; the offer's outcome comes on the channel.
func ownOffer(t *testing.T, ctx context.Context, p *redistest.Proxy, direct redis.UniversalClient, c *part) (release func(), out <-chan error) {
	t.Helper()
	// The script loaded and the queue's layout read beforehand, so that
	// the held reply is the offer's.
	if err := lua.Offer.Load(context.Background(), direct).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.layout.check(context.Background(), &c.bg); err != nil {
		t.Fatal(err)
	}
	own := hourItem(t, c, "own")
	release = p.HoldNextReply()
	done := make(chan error, 1)
	go func() {
		st, err := c.Offer(ctx, own)
		if err == nil && st != lua.OfferPending {
			err = errors.New("not stored as pending")
		}
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ok, err := direct.HExists(context.Background(), c.Keys.Items, "own").Result()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			release()
			t.Fatal("the offer never reached the server")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The proxy reads the reply it holds on its own goroutine: let it.
	time.Sleep(50 * time.Millisecond)
	select {
	case err := <-done:
		release()
		t.Fatalf("the offer returned (%v) while its reply was held", err)
	default:
	}
	if n := senders(c); n != 1 {
		release()
		t.Fatalf("%d senders while the caller sends its own offer, want 1", n)
	}
	return release, done
}

// A caller's own offer stalled on its connection does not hold back the
// offers made meanwhile: they go in a sender's call, as behind a stalled
// sender.
func TestOwnOfferDoesNotHoldOthers(t *testing.T) {
	direct, p, _, c := proxiedCore(t)
	release, own := ownOffer(t, context.Background(), p, direct, c)
	defer release()
	const others = 5
	errs := make(chan error, others)
	var wg sync.WaitGroup
	for i := range others {
		it := hourItem(t, c, string(rune('a'+i)))
		wg.Go(func() {
			_, err := c.Offer(context.Background(), it)
			errs <- err
		})
	}
	for range others {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("offers wait behind a stalled call of a caller's own")
		}
	}
	wg.Wait()
	select {
	case err := <-own:
		t.Fatalf("the stalled offer returned (%v) before its reply", err)
	default:
	}
	release()
	if err := <-own; err != nil {
		t.Fatal(err)
	}
	if n := pendingItems(t, direct, c); n != others+1 {
		t.Fatalf("%d items pending, want %d", n, others+1)
	}
}

// A caller's own offer whose connection is cut after the server ran it:
// resent by go-redis, the second run changes nothing and returns the
// first's outcome; with resends off, the offer fails with
// OfferOutcomeUnknown. Either way the item is stored once, and the next
// offer is sent again from its caller's goroutine.
func TestOwnOfferConnectionCut(t *testing.T) {
	for _, retries := range []int{0, -1} {
		t.Run(map[int]string{0: "resent", -1: "not resent"}[retries], func(t *testing.T) {
			direct := redistest.Standalone(t)
			p := redistest.StartProxy(t, direct.Options().Addr)
			rdb := p.Client(t, func(o *redis.Options) { o.MaxRetries = retries })
			c := testCore(t, rdb)
			release, own := ownOffer(t, context.Background(), p, direct, c)
			defer release()
			p.Cut()
			var err error
			select {
			case err = <-own:
			case <-time.After(10 * time.Second):
				t.Fatal("the offer did not return after its connection was cut")
			}
			var unknown *OfferOutcomeUnknown
			switch {
			case retries == 0 && err != nil:
				t.Fatalf("resent offer: %v, want its first outcome", err)
			case retries < 0 && !errors.As(err, &unknown):
				t.Fatalf("offer not resent: %v, want an OfferOutcomeUnknown", err)
			}
			if n := pendingItems(t, direct, c); n != 1 {
				t.Fatalf("%d items pending, want 1", n)
			}
			if n := senders(c); n != 0 {
				t.Fatalf("%d senders after the cut offer returned, want 0", n)
			}
			if _, err := c.Offer(context.Background(), hourItem(t, c, "next")); err != nil {
				t.Fatal(err)
			}
			if n := senders(c); n != 0 {
				t.Fatalf("%d senders after the next lone offer, want 0", n)
			}
		})
	}
}

// A lone offer already on the wire when its context ends is seen through:
// it returns with the call's outcome when the reply comes, like a plain
// go-redis call, not with the context's error before it.
func TestOwnOfferOutlivesItsContext(t *testing.T) {
	direct, p, _, c := proxiedCore(t)
	ctx, cancel := context.WithCancel(context.Background())
	release, own := ownOffer(t, ctx, p, direct, c)
	defer release()
	cancel()
	select {
	case err := <-own:
		t.Fatalf("the offer returned (%v) when its context ended, before its reply", err)
	case <-time.After(100 * time.Millisecond):
	}
	release()
	if err := <-own; err != nil {
		t.Fatalf("offer whose reply came after its context ended: %v, want its outcome (stored)", err)
	}
	if n := pendingItems(t, direct, c); n != 1 {
		t.Fatalf("%d items pending, want 1", n)
	}
}
