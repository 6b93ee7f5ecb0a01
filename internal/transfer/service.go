package transfer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/tracing"
)

// Defaults for [Target] fields left zero.
const (
	DefaultBatchSize = 500
	DefaultSweep     = time.Second
	// MaxBatchSize bounds a batch: the script unpacks its results.
	MaxBatchSize = 5000
	// DefaultMaxAttempts is how many deliveries an item gets before the
	// reclaimer dead-letters it when its lease expires once more.
	DefaultMaxAttempts = 10
)

// Target is one queue to transfer.
type Target struct {
	Keys      keys.Queue
	BatchSize int           // items per script call; 0 means DefaultBatchSize
	Sweep     time.Duration // longest wait between runs; 0 means DefaultSweep
	Logger    *slog.Logger  // nil means slog.Default()
	// MaxAttempts: an item whose lease expires after this many deliveries
	// is dead-lettered instead of made ready again. 0 means DefaultMaxAttempts.
	MaxAttempts int
	// Telemetry records transfer spans and metrics; nil records nothing.
	Telemetry *tracing.Queue
}

// registry holds the one Service per client. It is the only package-level
// state in redelay, and exists because the contract is "one transfer service
// per Redis client in the process", shared by queues that do not know of each
// other.
var registry = struct { //nolint:gochecknoglobals // see comment above
	mu       sync.Mutex
	services map[redis.UniversalClient]*Service
}{services: map[redis.UniversalClient]*Service{}}

// Service runs the transfer workers of one Redis client.
type Service struct {
	rdb    redis.UniversalClient
	shared bool // in registry

	mu      sync.Mutex
	workers map[string]*worker // by Keys.Wake
	pubsub  *redis.PubSub
	done    chan struct{} // closed when listen returns
}

// Register starts transferring t on rdb's service, creating the service if
// this is its first queue. A queue registered twice shares one worker (the
// first registration's settings win); it stops when every registration of
// it is closed.
func Register(rdb redis.UniversalClient, t Target) (*Registration, error) {
	if rdb == nil {
		return nil, errors.New("transfer: nil client")
	}
	if t.BatchSize == 0 {
		t.BatchSize = DefaultBatchSize
	}
	if t.BatchSize < 1 || t.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("transfer: batch size %d out of range 1..%d", t.BatchSize, MaxBatchSize)
	}
	if t.Sweep == 0 {
		t.Sweep = DefaultSweep
	}
	if t.Sweep < time.Millisecond {
		return nil, fmt.Errorf("transfer: sweep interval %v below 1ms", t.Sweep)
	}
	if t.Logger == nil {
		t.Logger = slog.Default()
	}
	if t.MaxAttempts == 0 {
		t.MaxAttempts = DefaultMaxAttempts
	}
	if t.MaxAttempts < 1 {
		return nil, fmt.Errorf("transfer: max attempts %d below 1", t.MaxAttempts)
	}

	// Clients of a comparable type (every go-redis client is a pointer) share
	// a service; anything else gets a service of its own.
	shareable := reflect.TypeOf(rdb).Comparable()
	var s *Service
	if shareable {
		registry.mu.Lock()
		defer registry.mu.Unlock()
		s = registry.services[rdb]
	}
	if s == nil {
		s = &Service{rdb: rdb, shared: shareable, workers: map[string]*worker{}}
		if shareable {
			registry.services[rdb] = s
		}
	}
	return s.add(t), nil
}

// add registers t; with the registry lock held when shared.
func (s *Service) add(t Target) *Registration {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.workers[t.Keys.Wake]
	if w == nil {
		w = newWorker(s.rdb, t)
		s.workers[t.Keys.Wake] = w
		if s.pubsub == nil {
			s.pubsub = s.rdb.Subscribe(context.Background())
			s.done = make(chan struct{})
			go s.listen(s.pubsub, s.done)
		}
		// Subscribe records the channel even when Redis is down, and the
		// pub/sub connection subscribes it again on every reconnect; the
		// worker's sweep covers the meantime.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.pubsub.Subscribe(ctx, t.Keys.Wake); err != nil {
			t.Logger.Warn("redelay: wake-up subscription failed; relying on the sweep until it reconnects",
				"queue", t.Keys.Name, "err", err)
		}
		cancel()
		go w.run()
	}
	w.refs++
	return &Registration{s: s, w: w}
}

// remove drops one reference to w and stops what is no longer used.
func (s *Service) remove(w *worker) {
	if s.shared {
		registry.mu.Lock()
		defer registry.mu.Unlock()
	}
	s.mu.Lock()
	w.refs--
	last := w.refs == 0
	if last {
		delete(s.workers, w.t.Keys.Wake)
	}
	var ps *redis.PubSub
	var done chan struct{}
	if len(s.workers) == 0 && s.pubsub != nil {
		ps, done = s.pubsub, s.done
		s.pubsub, s.done = nil, nil
		if s.shared {
			delete(registry.services, s.rdb)
		}
	} else if last && s.pubsub != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.pubsub.Unsubscribe(ctx, w.t.Keys.Wake) // best effort: a stale subscription only costs a no-op wake
		cancel()
	}
	s.mu.Unlock()

	if last {
		w.stop()
	}
	if ps != nil {
		_ = ps.Close()
		<-done
	}
}

// listen routes wake-up messages to workers. A subscription confirmation
// (first subscribe, or resubscribe after a reconnect) wakes the worker too,
// since messages may have been missed while disconnected.
func (s *Service) listen(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	for msg := range ps.ChannelWithSubscriptions(redis.WithChannelSize(256)) {
		var channel string
		switch m := msg.(type) {
		case *redis.Message:
			channel = m.Channel
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			channel = m.Channel
		default:
			continue
		}
		s.mu.Lock()
		w := s.workers[channel]
		s.mu.Unlock()
		if w != nil {
			w.wake()
		}
	}
}

// Registration is one queue's hold on its service.
type Registration struct {
	s    *Service
	w    *worker
	once sync.Once
}

// Wake asks the worker to run now, as a wake-up message would.
func (r *Registration) Wake() { r.w.wake() }

// Close releases the registration; the worker stops when it was the last
// for its queue, the service when it was the last queue. Close waits for a
// script call in flight to finish, so items are never left half-moved
// (they cannot be: each move is atomic). Closing twice is harmless.
func (r *Registration) Close() {
	r.once.Do(func() { r.s.remove(r.w) })
}

// RunOnce does, once and in the calling goroutine, what a worker does on
// each wake-up: move t's due items (in full batches until a short one) and
// reclaim its expired leases. Workers need no help; RunOnce is for tools and
// tests that want a deterministic step.
func RunOnce(ctx context.Context, rdb redis.UniversalClient, t Target) error {
	if rdb == nil {
		return errors.New("transfer: nil client")
	}
	t.BatchSize = cmp.Or(t.BatchSize, DefaultBatchSize)
	t.Sweep = cmp.Or(t.Sweep, DefaultSweep)
	t.MaxAttempts = cmp.Or(t.MaxAttempts, DefaultMaxAttempts)
	t.Logger = cmp.Or(t.Logger, slog.Default())
	_, err := newWorker(rdb, t).drain(ctx)
	return err
}
