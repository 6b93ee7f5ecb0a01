package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/store"
)

// The registry of consumers: every Consume records itself under its
// queue's key prefix, again every ConsumerRefresh, and removes its record
// when it returns. A record not refreshed for ConsumerGone is not listed
// (its process crashed, or lost Redis); the refreshes of the other
// consumers delete it after consumerSweep.
const (
	ConsumerRefresh = 5 * time.Second
	ConsumerGone    = 30 * time.Second
	consumerSweep   = time.Minute
)

// Consumer is one consuming process as the registry holds it.
type Consumer struct {
	Queue       string    `json:"queue"`
	Host        string    `json:"host"`
	PID         int       `json:"pid"`
	Concurrency int       `json:"concurrency"`
	InFlight    int       `json:"inflight"`
	Started     time.Time `json:"started"`
	LastSeen    time.Time `json:"-"` // the server's clock at its last refresh
}

// consumerGone bounds the removal of a consumer's record when it stops: a
// stalled Redis must not hold up the stop (the record stops being listed
// after ConsumerGone anyway).
const consumerGone = 250 * time.Millisecond

// Present records this process as a consumer of q (with concurrency
// handlers, and inFlight items held now) in the registry of consumers
// until ctx ends, refreshing the record every ConsumerRefresh; then it
// removes the record and returns. Run it in a goroutine owned by the
// consumer. Redis errors are logged at debug level and tried again at the
// next refresh: the registry informs operators, it never stops a consumer.
func (q *Queue) Present(ctx context.Context, concurrency int, inFlight func() int) {
	c := q.parts[0]
	st := c.Store.Client()
	host, _ := os.Hostname()
	rec := Consumer{Queue: q.Name(), Host: host, PID: os.Getpid(), Concurrency: concurrency, Started: time.Now().UTC()}
	id := rec.Host + ":" + NewID()
	put := func(sweep time.Duration) {
		rec.InFlight = inFlight()
		b, err := json.Marshal(rec)
		if err == nil {
			// Call returns when ctx ends (the consumer stops) even while
			// Redis stalls; the call finishes in the background.
			pctx, cancel := context.WithTimeout(ctx, ConsumerRefresh)
			_, err = Call(pctx, c, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, st.PutConsumer(ctx, c.Keys.Prefix, id, b, sweep)
			}, nil)
			cancel()
		}
		if err != nil {
			c.Cfg.Logger.Debug("redelay: could not refresh this consumer's record", "queue", q.Name(), "err", err)
		}
	}
	put(consumerSweep)
	tick := time.NewTicker(ConsumerRefresh)
	defer tick.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), consumerGone)
			defer cancel()
			if _, err := Call(dctx, c, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, st.DeleteConsumer(ctx, c.Keys.Prefix, id)
			}, nil); err != nil {
				c.Cfg.Logger.Debug("redelay: could not remove this consumer's record", "queue", q.Name(), "err", err)
			}
			return
		case <-tick.C:
			sweep := time.Duration(0)
			if n%int(consumerSweep/ConsumerRefresh) == 0 {
				sweep = consumerSweep
			}
			put(sweep)
		}
	}
}

// Consumers lists the consumers recorded under the key prefix ("": the
// default) and seen within ConsumerGone, by queue, host, PID and start.
func Consumers(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]Consumer, error) {
	now, recs, err := store.New(rdb).Consumers(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := []Consumer{}
	for _, r := range recs {
		if now.Sub(r.LastSeen) > ConsumerGone {
			continue
		}
		var c Consumer
		if json.Unmarshal(r.JSON, &c) != nil {
			continue // not a record of ours
		}
		c.LastSeen = r.LastSeen.UTC()
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Consumer) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Host, b.Host), cmp.Compare(a.PID, b.PID), a.Started.Compare(b.Started))
	})
	return out, nil
}
