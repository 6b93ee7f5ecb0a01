package delayed_test

// The hot paths that scripts/ab.sh compares between two revisions and that
// no other benchmark measures in the same shape. This file uses the public
// API alone, so that the script can build the same file against both
// revisions of an A/B. It reaches the redis-server named by
// REDELAY_BENCH_ADDR (host:port), which the script starts fresh for each
// run and discards afterwards:
//
//	scripts/ab.sh main HEAD

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
)

// abProducers is how many goroutines BenchmarkOfferProducers offers from:
// the producer count of the side-by-side benchmark (bench/), held fixed
// whatever GOMAXPROCS, where b.RunParallel would scale it.
const abProducers = 8

// abValue is the value the A/B benchmarks offer: the same small job
// reference as the other benchmarks of this package.
type abValue struct {
	ID       int64  `msgpack:"id"`
	Kind     string `msgpack:"kind"`
	Customer string `msgpack:"customer"`
	Amount   int64  `msgpack:"amount"`
}

// abSeq numbers the queues the A/B benchmarks open, so that each round of
// b.N starts on an empty queue.
var abSeq atomic.Int64

// abClient returns a client to the server named by REDELAY_BENCH_ADDR,
// closed when b ends. Without the variable the benchmark is skipped: it
// is meant to run under scripts/ab.sh, and the server it writes to is the
// script's to throw away.
func abClient(b *testing.B) *redis.Client {
	b.Helper()
	addr := os.Getenv("REDELAY_BENCH_ADDR")
	if addr == "" {
		b.Skip("REDELAY_BENCH_ADDR is not set; scripts/ab.sh starts a redis-server and sets it")
	}
	rdb := redis.NewClient(&redis.Options{
		Addr:                     addr,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	b.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		b.Fatalf("redis-server at REDELAY_BENCH_ADDR=%s: %v", addr, err)
	}
	return rdb
}

// BenchmarkOfferProducers: one op is one Offer of a small struct due in an
// hour (so nothing moves meanwhile), from abProducers goroutines at once.
// offers/s is the rate of all producers together.
func BenchmarkOfferProducers(b *testing.B) {
	ctx := context.Background()
	rdb := abClient(b)
	q := blocking.New[abValue](rdb, fmt.Sprintf("ab-offer-%d-%d", os.Getpid(), abSeq.Add(1)))
	dq := delayed.New(q)
	defer func() {
		_ = dq.Close()
		_ = q.Close()
	}()
	v := abValue{ID: 1, Kind: "invoice.send", Customer: "customer-000123", Amount: 4200}
	// The first offer loads the scripts; keep it out of the timed section.
	if _, err := dq.Offer(ctx, v, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range abProducers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, err := dq.Offer(ctx, v, time.Hour); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "offers/s")
}
