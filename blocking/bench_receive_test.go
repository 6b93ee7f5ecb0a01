package blocking_test

// At-least-once throughput, to read against BenchmarkTake of the same run:
//
//	go test -run '^$' -bench 'Take|ReceiveAck|Consume' -benchmem ./blocking/

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
	"github.com/redelay/redelay/internal/seedtest"
)

// BenchmarkReceiveAck: one op is one Receive plus one Ack of a ready item
// (two script calls), the at-least-once counterpart of one Take.
func BenchmarkReceiveAck(b *testing.B) {
	ctx := context.Background()
	setup := func(b *testing.B) *blocking.Queue[seedtest.BenchValue] {
		rdb, q := benchQueue(b)
		benchFill(b, rdb, redistest.KeysOf(q.Name()).Ready, benchStoredItem(b, rdb), b.N+1)
		d, err := q.Receive(ctx) // starts the transfer outside the timed section
		if err != nil {
			b.Fatal(err)
		}
		if err := d.Ack(ctx); err != nil {
			b.Fatal(err)
		}
		return q
	}
	b.Run("serial", func(b *testing.B) {
		q := setup(b)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			d, err := q.Receive(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := d.Ack(ctx); err != nil {
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
				d, err := q.Receive(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				if err := d.Ack(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.StopTimer()
		benchCheckEmpty(b, q)
	})
}

// BenchmarkConsume: one op is one item handled (and acked) by Consume with
// a no-op handler and 16 handlers at once.
func BenchmarkConsume(b *testing.B) {
	ctx := context.Background()
	rdb, q := benchQueue(b)
	benchFill(b, rdb, redistest.KeysOf(q.Name()).Ready, benchStoredItem(b, rdb), b.N)
	var done atomic.Int64
	cctx, cancel := context.WithCancel(ctx)
	b.ReportAllocs()
	b.ResetTimer()
	err := q.Consume(cctx, func(context.Context, *blocking.Delivery[seedtest.BenchValue]) error {
		if done.Add(1) == int64(b.N) {
			cancel()
		}
		return nil
	}, blocking.WithConcurrency(16))
	b.StopTimer()
	if ctx.Err() == nil && cctx.Err() == nil {
		b.Fatalf("Consume returned early: %v", err)
	}
	benchCheckEmpty(b, q)
}
