package seedtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redelay/redelay/blocking"
)

// ReceiveWithin receives one item of q within the given time and fails the
// test when none comes.
func ReceiveWithin[T any](t testing.TB, q *blocking.Queue[T], within time.Duration) *blocking.Delivery[T] {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	d, err := q.Receive(ctx)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return d
}

// ExpectNothing fails the test when q delivers an item within the given
// time, or its Receive fails other than by running out of that time.
func ExpectNothing[T any](t testing.TB, q *blocking.Queue[T], within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	if d, err := q.Receive(ctx); err == nil {
		t.Fatalf("unexpected delivery %v (attempt %d)", d.Value, d.Attempt)
	} else if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Receive: %v", err)
	}
}

// FastBackoff is a retry backoff (blocking.WithBackoff) of 10 ms for every
// attempt, for tests that fail items and want them back soon.
func FastBackoff(int) time.Duration { return 10 * time.Millisecond }
