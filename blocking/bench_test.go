package blocking_test

// Benchmarks of Offer and Take, next to raw go-redis baselines of the same
// value size run against the same server in the same run, so that results
// are read as ratios (see docs/benchmarks.md):
//
//	go test -run '^$' -bench . -benchmem ./blocking/
//
// "parallel" sub-benchmarks run benchParallelism×GOMAXPROCS goroutines.

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

const (
	// benchPipeline is how many commands a pipelined baseline sends per
	// round trip.
	benchPipeline = 100
	// benchParallelism multiplies GOMAXPROCS for b.RunParallel: a Redis
	// call mostly waits on the network, so a handful of goroutines per CPU
	// is what keeps the server busy.
	benchParallelism = 8
	// benchFillArgs is how many values one LPUSH carries when a list is
	// filled before a timed section.
	benchFillArgs = 1000
)

// benchQueue opens a queue with a fresh name on the shared standalone
// server; the queue is closed and its keys deleted when b's round ends.
func benchQueue(b *testing.B) (*redis.Client, *blocking.Queue[seedtest.BenchValue]) {
	b.Helper()
	rdb := redistest.Standalone(b)
	q := blocking.New[seedtest.BenchValue](rdb, redistest.QueueName(b))
	b.Cleanup(func() {
		_ = q.Close()
		benchUnlink(rdb, redistest.KeysOf(q.Name()))
	})
	return rdb, q
}

// benchUnlink deletes a queue's keys, so the shared server does not
// accumulate what the benchmarks leave behind.
func benchUnlink(rdb redis.UniversalClient, k keys.Set) {
	_ = rdb.Unlink(context.Background(), k.Ready, k.Delayed, k.Items, k.Seq).Err()
}

// benchStoredItem offers one value to a scratch queue and returns the bytes
// the queue stored for it (the envelope): the raw baselines push values of
// exactly this size, and BenchmarkTake fills its list with copies of it.
func benchStoredItem(b *testing.B, rdb *redis.Client) []byte {
	b.Helper()
	ctx := context.Background()
	q := blocking.New[seedtest.BenchValue](rdb, redistest.QueueName(b))
	defer func() {
		_ = q.Close()
		benchUnlink(rdb, redistest.KeysOf(q.Name()))
	}()
	if _, err := q.Offer(ctx, seedtest.NewBenchValue(1)); err != nil {
		b.Fatal(err)
	}
	raw, err := rdb.LIndex(ctx, redistest.KeysOf(q.Name()).Ready, 0).Bytes()
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// benchFill pushes n copies of v onto list, in pipelined LPUSHes of
// benchFillArgs values each.
func benchFill(b *testing.B, rdb *redis.Client, list string, v []byte, n int) {
	b.Helper()
	ctx := context.Background()
	args := make([]any, benchFillArgs)
	for i := range args {
		args[i] = v
	}
	pipe := rdb.Pipeline()
	for left := n; left > 0; {
		k := min(left, benchFillArgs)
		pipe.LPush(ctx, list, args[:k]...)
		left -= k
		if pipe.Len() == benchPipeline || left == 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	if got, err := rdb.LLen(ctx, list).Result(); err != nil || got != int64(n) {
		b.Fatalf("filled list holds %d items (%v), want %d", got, err, n)
	}
}

// benchRawValue returns a value of the given size whose first 8 bytes hold i.
func benchRawValue(size int, i uint64) []byte {
	v := make([]byte, max(size, 8))
	for j := range v {
		v[j] = 'x'
	}
	binary.BigEndian.PutUint64(v, i)
	return v
}

// BenchmarkOffer: one op is one Offer of a small struct.
func BenchmarkOffer(b *testing.B) {
	ctx := context.Background()
	b.Run("serial", func(b *testing.B) {
		_, q := benchQueue(b)
		v := seedtest.NewBenchValue(1)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := q.Offer(ctx, v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		_, q := benchQueue(b)
		b.SetParallelism(benchParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			v := seedtest.NewBenchValue(1)
			for pb.Next() {
				if _, err := q.Offer(ctx, v); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkTake: one op is one Take of a ready item. The list is filled with
// b.N stored items before the timer starts, so no Take waits.
func BenchmarkTake(b *testing.B) {
	ctx := context.Background()
	setup := func(b *testing.B) *blocking.Queue[seedtest.BenchValue] {
		rdb, q := benchQueue(b)
		benchFill(b, rdb, redistest.KeysOf(q.Name()).Ready, benchStoredItem(b, rdb), b.N+1)
		// The first Take starts the queue's transfer; keep that out of the
		// timed section.
		if _, err := q.Take(ctx); err != nil {
			b.Fatal(err)
		}
		return q
	}
	b.Run("serial", func(b *testing.B) {
		q := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := q.Take(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		benchCheckEmpty(b, q)
	})
	b.Run("parallel", func(b *testing.B) {
		q := setup(b)
		b.SetParallelism(benchParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := q.Take(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		benchCheckEmpty(b, q)
	})
}

func benchCheckEmpty(b *testing.B, q *blocking.Queue[seedtest.BenchValue]) {
	b.Helper()
	if n, err := q.Size(context.Background()); err != nil || n != 0 {
		b.Fatalf("Size after the timed Takes = %d, %v; want 0", n, err)
	}
}

// BenchmarkRawLPUSH is the baseline of BenchmarkOffer: LPUSH of a value the
// size of the envelope Offer stores. "unpipelined" and "parallel" make one
// round trip per op like Offer; "pipelined" sends benchPipeline per round
// trip, the ceiling for a client of this server.
func BenchmarkRawLPUSH(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Standalone(b)
	size := len(benchStoredItem(b, rdb))
	b.Logf("value size %d bytes", size)
	list := func(b *testing.B) string {
		k, err := keys.New(redistest.QueueName(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { benchUnlink(rdb, k) })
		return k.Ready
	}
	b.Run("unpipelined", func(b *testing.B) {
		key, v := list(b), benchRawValue(size, 1)
		b.ReportAllocs()
		for b.Loop() {
			if err := rdb.LPush(ctx, key, v).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		key := list(b)
		b.SetParallelism(benchParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			v := benchRawValue(size, 1)
			for pb.Next() {
				if err := rdb.LPush(ctx, key, v).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("pipelined", func(b *testing.B) {
		key, v := list(b), benchRawValue(size, 1)
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			k := min(benchPipeline, b.N-done)
			pipe := rdb.Pipeline()
			for range k {
				pipe.LPush(ctx, key, v)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				b.Fatal(err)
			}
			done += k
		}
	})
}

// BenchmarkRawRPOP is the baseline of BenchmarkTake: RPOP of a value the
// size of a stored envelope, from a list filled before the timer starts.
// "unpipelined" and "parallel" make one round trip per op like Take;
// "brpop" is the blocking pop Take itself sends, on a list that is never
// empty; "pipelined" sends benchPipeline per round trip.
func BenchmarkRawRPOP(b *testing.B) {
	ctx := context.Background()
	rdb := redistest.Standalone(b)
	size := len(benchStoredItem(b, rdb))
	b.Logf("value size %d bytes", size)
	setup := func(b *testing.B) string {
		k, err := keys.New(redistest.QueueName(b))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { benchUnlink(rdb, k) })
		benchFill(b, rdb, k.Ready, benchRawValue(size, 1), b.N)
		return k.Ready
	}
	b.Run("unpipelined", func(b *testing.B) {
		key := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := rdb.RPop(ctx, key).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("brpop", func(b *testing.B) {
		key := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := rdb.BRPop(ctx, time.Second, key).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		key := setup(b)
		b.SetParallelism(benchParallelism)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := rdb.RPop(ctx, key).Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("pipelined", func(b *testing.B) {
		key := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		for done := 0; done < b.N; {
			k := min(benchPipeline, b.N-done)
			pipe := rdb.Pipeline()
			for range k {
				pipe.RPop(ctx, key)
			}
			cmds, err := pipe.Exec(ctx)
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range cmds {
				if len(c.(*redis.StringCmd).Val()) != size {
					b.Fatalf("RPOP returned %d bytes, want %d", len(c.(*redis.StringCmd).Val()), size)
				}
			}
			done += k
		}
	})
}

// BenchmarkPaired times each single-item call against its raw baseline
// call by call (see redistest.Paired): Offer against LPUSH, Take against RPOP.
// One op is one call of each.
func BenchmarkPaired(b *testing.B) {
	ctx := context.Background()
	b.Run("Offer_vs_LPUSH", func(b *testing.B) {
		rdb, q := benchQueue(b)
		raw := benchRawValue(len(benchStoredItem(b, rdb)), 1)
		list := redistest.KeysOf(q.Name()).Child("raw").Ready // same hash tag, deleted with the queue
		b.Cleanup(func() { _ = rdb.Unlink(ctx, list).Err() })
		v := seedtest.NewBenchValue(1)
		b.ReportAllocs()
		b.ResetTimer()
		redistest.Paired(b,
			"offer", func() error { _, err := q.Offer(ctx, v); return err },
			"lpush", func() error { return rdb.LPush(ctx, list, raw).Err() })
	})
	b.Run("Take_vs_RPOP", func(b *testing.B) {
		rdb, q := benchQueue(b)
		stored := benchStoredItem(b, rdb)
		benchFill(b, rdb, redistest.KeysOf(q.Name()).Ready, stored, b.N+1)
		list := redistest.KeysOf(q.Name()).Child("raw").Ready
		b.Cleanup(func() { _ = rdb.Unlink(ctx, list).Err() })
		benchFill(b, rdb, list, benchRawValue(len(stored), 1), b.N)
		if _, err := q.Take(ctx); err != nil { // starts the transfer
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		redistest.Paired(b,
			"take", func() error { _, err := q.Take(ctx); return err },
			"rpop", func() error { return rdb.RPop(ctx, list).Err() })
	})
}
