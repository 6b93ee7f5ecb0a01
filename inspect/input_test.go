package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/inspect"
	"github.com/redelay/redelay/internal/redistest"
)

// calls runs every method of the inspector that names a queue, on queue
// and an item id, and returns each one's error by name.
func calls(in *inspect.Inspector, queue, id string) map[string]error {
	ctx := context.Background()
	errs := itemCalls(in, queue, id)
	_, errs["Stats"] = in.Stats(ctx, queue)
	_, errs["List"] = in.List(ctx, queue, inspect.Ready, 0, 10)
	_, errs["Purge"] = in.Purge(ctx, queue, inspect.Dead)
	errs["Pause"] = in.Pause(ctx, queue)
	errs["Resume"] = in.Resume(ctx, queue)
	return errs
}

// itemCalls runs every method of the inspector that names an item.
func itemCalls(in *inspect.Inspector, queue, id string) map[string]error {
	ctx := context.Background()
	errs := map[string]error{}
	_, errs["Get"] = in.Get(ctx, queue, id)
	errs["Delete"] = in.Delete(ctx, queue, id)
	errs["Promote"] = in.Promote(ctx, queue, id)
	errs["Reschedule"] = in.Reschedule(ctx, queue, id, time.Now().Add(time.Hour))
	errs["Requeue"] = in.Requeue(ctx, queue, id)
	return errs
}

// wantAll fails unless every error wraps target and contains says.
func wantAll(t *testing.T, errs map[string]error, target error, says string) {
	t.Helper()
	for name, err := range errs {
		if !errors.Is(err, target) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s = %v; want %v saying %q", name, err, target, says)
		}
	}
}

func TestBadInput(t *testing.T) {
	redistest.ForEach(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := populate(t, rdb)
		in := inspect.New(rdb)
		all := counts{1, 1, 1, 1, 1}

		t.Run("invalid queue name", func(t *testing.T) {
			wantAll(t, calls(in, "bad{name", "o-ready"), inspect.ErrInvalidArgument, `"bad{name" contains '{'`)
			wantAll(t, calls(in, "", "o-ready"), inspect.ErrInvalidArgument, "invalid queue name: empty")
		})
		t.Run("unknown queue", func(t *testing.T) {
			name := redistest.QueueName(t)
			wantAll(t, calls(in, name, "o-ready"), inspect.ErrNotFound, "no such queue")
			// Nothing was created (Pause would have written a meta hash).
			k := redistest.KeysOf(name)
			if n, err := rdb.Exists(ctx, k.Meta, k.Ready, k.DeadReady).Result(); err != nil || n != 0 {
				t.Fatalf("keys of an unknown queue after the calls: %d, %v", n, err)
			}
		})
		t.Run("unknown id", func(t *testing.T) {
			wantAll(t, itemCalls(in, f.name, "nope"), inspect.ErrNotFound, `no item "nope"`)
		})
		t.Run("invalid id", func(t *testing.T) {
			wantAll(t, itemCalls(in, f.name, ""), inspect.ErrInvalidArgument, "empty id")
			wantAll(t, map[string]error{"Get": func() error { _, err := in.Get(ctx, f.name, strings.Repeat("x", 257)); return err }()},
				inspect.ErrInvalidArgument, "id of 257 bytes")
		})
		t.Run("page", func(t *testing.T) {
			for _, p := range []struct {
				offset, limit int
				says          string
			}{
				{-1, 10, "offset -1"}, {0, 0, "limit 0"}, {0, -5, "limit -5"}, {0, 1001, "limit 1001 out of range 1..1000"},
				{inspect.MaxOffset + 1, 10, "offset 1099511627777"},
			} {
				_, err := in.List(ctx, f.name, inspect.Delayed, p.offset, p.limit)
				if !errors.Is(err, inspect.ErrInvalidArgument) || !strings.Contains(err.Error(), p.says) {
					t.Errorf("List(%d, %d) = %v; want ErrInvalidArgument saying %q", p.offset, p.limit, err, p.says)
				}
			}
			if items, err := in.List(ctx, f.name, inspect.Delayed, inspect.MaxOffset, inspect.MaxPage); err != nil || len(items) != 0 {
				t.Errorf("List at MaxOffset = %v, %v", items, err)
			}
		})
		t.Run("state", func(t *testing.T) {
			valid := "delayed, retry, ready, inflight, dead"
			if _, err := inspect.ParseState("bogus"); !errors.Is(err, inspect.ErrInvalidArgument) ||
				!strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), valid) {
				t.Errorf("ParseState(bogus) = %v", err)
			}
			for _, s := range []string{"dead", "Dead", " INFLIGHT "} {
				if st, err := inspect.ParseState(s); err != nil || string(st) != strings.ToLower(strings.TrimSpace(s)) {
					t.Errorf("ParseState(%q) = %q, %v", s, st, err)
				}
			}
			if got := inspect.States(); len(got) != 5 || got[0] != inspect.Delayed || got[4] != inspect.Dead {
				t.Errorf("States() = %v", got)
			}
			_, err := in.List(ctx, f.name, inspect.State("bogus"), 0, 10)
			if !errors.Is(err, inspect.ErrInvalidArgument) || !strings.Contains(err.Error(), valid) {
				t.Errorf("List(bogus) = %v", err)
			}
			_, err = in.Purge(ctx, f.name, inspect.State(""))
			if !errors.Is(err, inspect.ErrInvalidArgument) || !strings.Contains(err.Error(), `unknown state ""`) {
				t.Errorf("Purge(\"\") = %v", err)
			}
		})
		t.Run("due time", func(t *testing.T) {
			for _, due := range []time.Time{{}, time.Unix(-10, 0), time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)} {
				err := in.Reschedule(ctx, f.name, "o-delayed", due)
				if !errors.Is(err, inspect.ErrInvalidArgument) || !strings.Contains(err.Error(), "out of range") {
					t.Errorf("Reschedule(%v) = %v", due, err)
				}
			}
		})
		t.Run("client", func(t *testing.T) {
			var nilClient *redis.Client
			ring := redis.NewRing(&redis.RingOptions{})
			defer ring.Close()
			for _, bad := range []*inspect.Inspector{nil, inspect.New(nil), inspect.New(nilClient), inspect.New(ring)} {
				errs := calls(bad, f.name, "o-ready")
				_, errs["Queues"] = bad.Queues(ctx)
				wantAll(t, errs, inspect.ErrInvalidArgument, "")
			}
		})
		if got := countsOf(t, in, f.name); got != all {
			t.Fatalf("counts after bad calls = %v", got)
		}
		if st, err := in.Stats(ctx, f.name); err != nil || st.Paused {
			t.Fatalf("Stats after bad calls = %+v, %v", st, err)
		}
	})
}
