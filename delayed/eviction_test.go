package delayed_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
	"github.com/redelay/redelay/internal/redistest"
)

// notStored fails the test unless an offer Redis refused for want of
// memory returned no ID and an error wrapping ErrOutOfMemory that says
// nothing was stored.
func notStored(t *testing.T, what string, ids []string, err error) {
	t.Helper()
	t.Logf("%s past maxmemory: ids %q, err: %v", what, ids, err)
	if len(ids) != 0 || !errors.Is(err, delayed.ErrOutOfMemory) ||
		!strings.Contains(err.Error(), "nothing was stored") || strings.Contains(err.Error(), "may have been stored") {
		t.Fatalf("%s past maxmemory: ids %q, %v; want no ID and ErrOutOfMemory saying nothing was stored", what, ids, err)
	}
}

// outOfMemoryOffers offers to dq, on servers that refuse writes for want
// of memory, in every way an offer goes, and checks that each says it was
// not stored.
func outOfMemoryOffers(t *testing.T, dq *delayed.Queue[string]) {
	ctx := context.Background()
	id, err := dq.Offer(ctx, "a", time.Hour)
	notStored(t, "Offer", nonEmpty(id), err)
	id, err = dq.Offer(ctx, "b", 0)
	notStored(t, "Offer due now", nonEmpty(id), err)
	id, err = dq.Offer(ctx, "c", time.Hour, delayed.WithID("unique"), delayed.WithUniqueFor(time.Hour))
	notStored(t, "Offer WithUniqueFor", nonEmpty(id), err)
	id, err = dq.Offer(ctx, "d", time.Hour, delayed.WithID("replace"), delayed.WithReplace())
	notStored(t, "Offer WithReplace", nonEmpty(id), err)
	ids, err := dq.OfferBatch(ctx, []string{"e", "f", "g"}, time.Hour)
	notStored(t, "OfferBatch", ids, err)
}

func nonEmpty(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}

// TestOfferOutOfMemory: every kind of delayed offer that Redis refuses
// for want of memory returns no ID and ErrOutOfMemory, and stores
// nothing; with a bound (one MULTI per batch) too.
func TestOfferOutOfMemory(t *testing.T) {
	redistest.ForEachDedicated(t, func(t *testing.T, d *redistest.Dedicated) {
		ctx := context.Background()
		rdb := d.Client()
		q, dq := open[string](t, rdb, redistest.QueueName(t))
		if _, err := dq.Offer(ctx, "kept", time.Hour); err != nil {
			t.Fatal(err)
		}
		bounded := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithMaxSize(100))
		bdq := delayed.New(bounded)
		t.Cleanup(func() { _ = bdq.Close(); _ = bounded.Close() })
		if _, err := bounded.Stats(ctx); err != nil { // its first call, before Redis is full
			t.Fatal(err)
		}
		// A queue first used past maxmemory: the check of its layout, which
		// records its partitions, is refused before any offer is sent.
		parted := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithPartitions(2))
		pdq := delayed.New(parted, delayed.WithoutTransfer())
		t.Cleanup(func() { _ = pdq.Close(); _ = parted.Close() })
		d.OutOfMemory(t)
		outOfMemoryOffers(t, dq)
		ids, err := bdq.OfferBatch(ctx, []string{"h", "i"}, time.Hour)
		notStored(t, "OfferBatch of a bounded queue", ids, err)
		outOfMemoryOffers(t, pdq)
		id, err := parted.Offer(ctx, "j")
		notStored(t, "Offer of a partitioned queue", nonEmpty(id), err)
		for _, s := range []struct {
			name string
			q    *blocking.Queue[string]
			want int64
		}{{"the queue", q, 1}, {"the bounded queue", bounded, 0}} {
			st, err := s.q.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.Delayed != s.want || st.Ready != 0 {
				t.Fatalf("%s after the refused offers: %+v; want %d delayed, none ready", s.name, st, s.want)
			}
		}
	})
}

// TestOfferOutOfMemoryReplicaAck: with WithReplicaAck the offers go in a
// pipeline with WAIT; a refused one says the same.
func TestOfferOutOfMemoryReplicaAck(t *testing.T) {
	master := redistest.StartServer(t)
	redistest.StartReplica(t, master)
	rdb := master.Client(t)
	q := blocking.New[string](rdb, redistest.QueueName(t), blocking.WithReplicaAck(1, time.Second))
	dq := delayed.New(q)
	t.Cleanup(func() { _ = dq.Close(); _ = q.Close() })
	d := &redistest.Dedicated{Masters: []*redis.Client{rdb}}
	d.OutOfMemory(t)
	outOfMemoryOffers(t, dq)
}
