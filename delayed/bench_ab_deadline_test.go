package delayed_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/delayed"
)

// BenchmarkOfferDeadline: one op is one Offer of a small struct due in an
// hour from a single producer, each under a context with a deadline, as a
// service offers from a request (a context that can end), where
// BenchmarkOffer/serial offers under context.Background().
func BenchmarkOfferDeadline(b *testing.B) {
	rdb := abClient(b)
	q := blocking.New[abValue](rdb, fmt.Sprintf("ab-deadline-%d-%d", os.Getpid(), abSeq.Add(1)))
	dq := delayed.New(q)
	defer func() {
		_ = dq.Close()
		_ = q.Close()
	}()
	v := abValue{ID: 1, Kind: "invoice.send", Customer: "customer-000123", Amount: 4200}
	// The first offer loads the scripts; keep it out of the timed section.
	if _, err := dq.Offer(context.Background(), v, time.Hour); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := dq.Offer(ctx, v, time.Hour)
		cancel()
		if err != nil {
			b.Fatal(err)
		}
	}
}
