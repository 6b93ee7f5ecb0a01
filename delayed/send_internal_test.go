package delayed

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redelay/redelay/blocking"
	"github.com/redelay/redelay/internal/redistest"
)

// When the client sends an offer script again after a lost reply, the
// second run finds the first run's item pending. With a generated ID that
// item can only be this offer's: success. With the caller's ID it may be
// anyone's: ErrDuplicate, as WithID documents.
func TestResentOfferWithGeneratedID(t *testing.T) {
	rdb := redistest.Standalone(t)
	q := blocking.New[int](rdb, redistest.QueueName(t))
	d := New(q, WithoutTransfer())
	t.Cleanup(func() { _ = d.Close(); _ = q.Close() })
	ctx := context.Background()
	const id = "generated-id-0001"
	for i := range 2 {
		if err := d.send(ctx, id, true, 7, "d", time.Hour.Microseconds(), nil); err != nil {
			t.Fatalf("send #%d of a generated ID: %v", i+1, err)
		}
	}
	if n, err := d.Size(ctx); err != nil || n != 1 {
		t.Fatalf("Size = %d, %v; want the one item", n, err)
	}
	if err := d.send(ctx, id, false, 7, "d", time.Hour.Microseconds(), nil); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("send of the caller's own ID while pending = %v, want ErrDuplicate", err)
	}
}
