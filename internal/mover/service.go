package mover

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
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// Defaults for [Target] fields left zero.
const (
	DefaultBatchSize = 500
	DefaultSweep     = time.Second
	// MaxBatchSize bounds a batch: the script unpacks its results.
	MaxBatchSize = 5000
)

// subscribeTimeout bounds one (un)subscribe call of the service.
const subscribeTimeout = 5 * time.Second

// Target is one queue to transfer.
type Target struct {
	Queue     *store.Partition
	BatchSize int           // items per script call; 0 means DefaultBatchSize
	Sweep     time.Duration // longest wait between runs; 0 means DefaultSweep
	Logger    *slog.Logger  // nil means slog.Default()
	// MaxAttempts applies when no process recorded the queue's limit in
	// Redis: an item whose lease expires after this many deliveries is
	// dead-lettered instead of made ready again. 0 means
	// store.DefaultMaxAttempts.
	MaxAttempts int
	// Telemetry records transfer spans and metrics; nil records nothing.
	Telemetry *telemetry.Recorder
	// Announce makes the worker record the queue in the registry of queues
	// (and Codec, when not empty, in its meta hash) once it runs: the
	// inspector finds queues there. Child queues (dead letters) are not
	// announced.
	Announce bool
	Codec    string
	// Retention is how long a queue of the same key prefix that holds
	// nothing and that no process announced is kept before this process's
	// sweep forgets it (store.Client.ForgetQueue); 0 means
	// DefaultRetention, negative: this process does not sweep.
	Retention time.Duration
}

// DefaultRetention is Target.Retention's default: a week.
const DefaultRetention = 7 * 24 * time.Hour

// AnnounceEvery is how often a worker announces its queue again while it
// runs, so that the registry's score says when a process last used it.
const AnnounceEvery = time.Hour

// Bounds of the retention sweep: it runs every tenth of the smallest
// retention of the service's queues, between sweepMin and sweepMax, and
// forgets at most sweepBatch queues of each prefix per run.
const (
	sweepMin   = 100 * time.Millisecond
	sweepMax   = 10 * time.Minute
	sweepBatch = 20
)

func (t *Target) validate() error {
	if t.Queue == nil {
		return errors.New("transfer: nil queue")
	}
	t.BatchSize = cmp.Or(t.BatchSize, DefaultBatchSize)
	if t.BatchSize < 1 || t.BatchSize > MaxBatchSize {
		return fmt.Errorf("transfer: batch size %d out of range 1..%d", t.BatchSize, MaxBatchSize)
	}
	t.Sweep = cmp.Or(t.Sweep, DefaultSweep)
	if t.Sweep < time.Millisecond {
		return fmt.Errorf("transfer: sweep interval %v below 1ms", t.Sweep)
	}
	t.Logger = cmp.Or(t.Logger, slog.Default())
	t.MaxAttempts = cmp.Or(t.MaxAttempts, store.DefaultMaxAttempts)
	if t.MaxAttempts < 1 {
		return fmt.Errorf("transfer: max attempts %d below 1", t.MaxAttempts)
	}
	return nil
}

// registry holds the one Service per client, and the one Server record
// per client. It is the only package-level mutable state in redelay, and
// exists because the contract is "one transfer service per Redis client in
// the process", shared by queues that do not know of each other; what is
// known of a client's server (its eviction policy, read and warned of once
// per client; the clock a test kit sets for it) is kept beside it. Its
// lock guards the maps only: no network call is made while it is held. A service is dropped when its last queue
// closes; a Server record is held by a weak pointer to its client and
// dropped when the client is garbage collected (see ServerOf).
var registry = struct { //nolint:gochecknoglobals // see comment above
	mu       sync.Mutex
	services map[redis.UniversalClient]*Service
	servers  map[any]*Server // by weak.Pointer to the client
}{services: map[redis.UniversalClient]*Service{}, servers: map[any]*Server{}}

// Service runs the transfer workers of one Redis client, and the one
// pub/sub connection that wakes them.
type Service struct {
	c      *store.Client
	srv    *Server // what is known of the client's server
	shared bool    // in registry

	mu      sync.Mutex
	workers map[string]*worker // by wake channel; guarded by mu

	changed chan struct{} // capacity 1: the set of channels changed
	ctx     context.Context
	cancel  context.CancelFunc // ends pub/sub calls in flight when the last queue leaves
	quit    chan struct{}      // closed when the last queue leaves
	done    chan struct{}      // closed when manage returns
	// sweepFrom is where the next retention sweep of each prefix starts
	// in its stale registry entries (manage's alone).
	sweepFrom map[string]int64
}

// Register starts transferring t on its client's service, creating the
// service if this is its first queue. A queue registered twice shares one
// worker (the first registration's settings win); it stops when every
// registration of it is closed. Register makes no network call: the
// service subscribes to the queue's wake-up channel in the background.
func Register(t Target) (*Registration, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	rdb := t.Queue.Client().Redis()
	srv := ServerOf(rdb) // before the registry's lock, which it takes
	// Clients of a comparable type (every go-redis client is a pointer) share
	// a service; anything else gets a service of its own.
	shareable := reflect.TypeOf(rdb).Comparable()
	if shareable {
		registry.mu.Lock()
		defer registry.mu.Unlock()
	}
	var s *Service
	if shareable {
		s = registry.services[rdb]
	}
	if s == nil {
		s = newService(t.Queue.Client(), srv, shareable)
		if shareable {
			registry.services[rdb] = s
		}
	}
	return s.add(t), nil
}

func newService(c *store.Client, srv *Server, shared bool) *Service {
	s := &Service{
		c: c, srv: srv, shared: shared, workers: map[string]*worker{},
		changed: make(chan struct{}, 1), sweepFrom: map[string]int64{},
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	go s.manage()
	return s
}

// add registers t.
func (s *Service) add(t Target) *Registration {
	s.mu.Lock()
	w := s.workers[t.Queue.K.Wake]
	if w == nil {
		w = newWorker(t)
		w.srv = s.srv
		s.workers[t.Queue.K.Wake] = w
		go w.run()
		s.signal()
	} else {
		w.merge(t)
	}
	w.refs++
	s.mu.Unlock()
	return &Registration{s: s, w: w}
}

func (s *Service) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// remove drops one reference to w and stops what is no longer used.
func (s *Service) remove(w *worker) {
	if s.shared {
		registry.mu.Lock()
	}
	s.mu.Lock()
	w.refs--
	last := w.refs == 0
	if last {
		delete(s.workers, w.t.Queue.K.Wake)
	}
	empty := len(s.workers) == 0
	if empty && s.shared && registry.services[s.c.Redis()] == s {
		delete(registry.services, s.c.Redis())
	}
	s.mu.Unlock()
	if s.shared {
		registry.mu.Unlock()
	}

	// The worker's wait for its call in flight and the pub/sub connection's
	// close are bounded and independent: they overlap, so that Close takes
	// the longer of the two, not their sum, while Redis is unreachable.
	var stopped sync.WaitGroup
	if last {
		stopped.Go(w.stop)
	}
	if empty {
		s.cancel()
		close(s.quit)
		<-s.done
	} else if last {
		s.signal()
	}
	stopped.Wait()
}

// channels returns the wake-up channels of the current workers.
func (s *Service) channels() map[string]*worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*worker, len(s.workers))
	for ch, w := range s.workers {
		out[ch] = w
	}
	return out
}

func (s *Service) worker(channel string) *worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.workers[channel]
}

// manage owns the pub/sub connection: it subscribes and unsubscribes the
// wake-up channels as queues come and go, with no lock held, and routes
// messages to the workers. A (re)subscription confirmation wakes the
// worker too, since messages may have been missed while disconnected.
// Subscribe records a channel even when Redis is down, and the connection
// subscribes it again on every reconnect; the workers' sweep covers the
// meantime.
func (s *Service) manage() {
	defer close(s.done)
	ctx := s.ctx
	var ps *redis.PubSub
	var listening chan struct{}
	sweep := time.NewTimer(sweepMax)
	defer sweep.Stop()
	defer func() {
		if ps != nil {
			_ = ps.Close()
			<-listening
		}
	}()
	subscribed := map[string]bool{}
	for {
		select {
		case <-s.quit:
			return
		case <-sweep.C:
			sweep.Reset(s.sweepRetention(ctx))
			continue
		case <-s.changed:
			sweep.Reset(s.sweepInterval())
		}
		want := s.channels()
		var add, drop []string
		for ch := range want {
			if !subscribed[ch] {
				add = append(add, ch)
			}
		}
		for ch := range subscribed {
			if want[ch] == nil {
				drop = append(drop, ch)
			}
		}
		if ps == nil && len(add) > 0 {
			var err error
			if ps, err = s.open(ctx); err != nil {
				for _, w := range want {
					w.t.Logger.Warn("redelay: no wake-up subscription; relying on the sweep", "queue", w.t.Queue.K.Name, "err", err)
				}
				continue
			}
			listening = make(chan struct{})
			go s.listen(ps, listening)
		}
		if len(add) > 0 {
			sctx, stop := context.WithTimeout(ctx, subscribeTimeout)
			if err := ps.Subscribe(sctx, add...); err != nil && ctx.Err() == nil {
				want[add[0]].t.Logger.Warn("redelay: wake-up subscription failed; relying on the sweep until it reconnects",
					"channels", add, "err", err)
			}
			stop()
			for _, ch := range add {
				subscribed[ch] = true
			}
		}
		if len(drop) > 0 && ps != nil {
			sctx, stop := context.WithTimeout(ctx, subscribeTimeout)
			_ = ps.Unsubscribe(sctx, drop...) // best effort: a stale subscription only costs a no-op wake
			stop()
			for _, ch := range drop {
				delete(subscribed, ch)
			}
		}
	}
}

// open creates the pub/sub connection. A client type that panics (a user's
// own UniversalClient) gives an error instead.
func (s *Service) open(ctx context.Context) (ps *redis.PubSub, err error) {
	defer func() {
		if r := recover(); r != nil {
			ps, err = nil, fmt.Errorf("%T.Subscribe panicked: %v", s.c.Redis(), r)
		}
	}()
	ps = s.c.Redis().Subscribe(ctx)
	if ps == nil {
		return nil, fmt.Errorf("%T.Subscribe returned nil", s.c.Redis())
	}
	return ps, nil
}

// listen routes wake-up messages to workers until ps is closed.
func (s *Service) listen(ps *redis.PubSub, done chan struct{}) {
	defer close(done)
	for msg := range ps.ChannelWithSubscriptions(redis.WithChannelSize(256)) {
		var channel string
		switch m := msg.(type) {
		case *redis.Message:
			channel = m.Channel
			if m.Payload == "pause" || m.Payload == "resume" {
				if w := s.worker(channel); w != nil {
					w.pause.Set(m.Payload == "pause")
				}
			}
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			channel = m.Channel
		default:
			continue
		}
		if w := s.worker(channel); w != nil {
			w.wake()
		}
	}
}

// PauseOf returns the pause flag view of the worker that transfers q in
// this process through q's client, or nil when none does: a queue handle
// that never started its background work pauses or resumes through it,
// so that the handles that did know at once.
func PauseOf(q *store.Partition) *Pause {
	rdb := q.Client().Redis()
	if !reflect.TypeOf(rdb).Comparable() {
		return nil // a service of its own per registration, none to find
	}
	registry.mu.Lock()
	s := registry.services[rdb]
	registry.mu.Unlock()
	if s == nil {
		return nil
	}
	if w := s.worker(q.K.Wake); w != nil {
		return w.pause
	}
	return nil
}

// Registration is one queue's hold on its service.
type Registration struct {
	s    *Service
	w    *worker
	once sync.Once
}

// Wake asks the worker to run now, as a wake-up message would.
func (r *Registration) Wake() { r.w.wake() }

// Pause returns this process's view of the queue's pause flag, shared by
// every registration of the queue on this client.
func (r *Registration) Pause() *Pause { return r.w.pause }

// Close releases the registration; the worker stops when it was the last
// for its queue, the service when it was the last queue. Close does not
// wait for a script call in flight: it finishes in the background (each
// call is atomic, so nothing is left half-moved), and Close returns
// promptly even while Redis is unreachable. Closing twice is harmless.
func (r *Registration) Close() {
	r.once.Do(func() { r.s.remove(r.w) })
}

// RunOnce does, once and in the calling goroutine, what a worker does on
// each wake-up: move t's due items (in full batches until a short one) and
// reclaim its expired leases. Workers need no help; RunOnce is for tools and
// tests that want a deterministic step.
func RunOnce(ctx context.Context, t Target) error {
	if err := t.validate(); err != nil {
		return err
	}
	_, _, err := newWorker(t).drain(ctx)
	return err
}

// maxSteps bounds the runs of one queue in Step.
const maxSteps = 16

// Step runs at once, in the calling goroutine, what the workers of rdb's
// service do when woken (move due items, reclaim expired leases,
// materialize due schedule ticks) until nothing more is due on the
// server's clock, then wakes the workers so that they set their timers
// from it. It is for a test kit that moves an embedded server's clock
// (package redelaytest): when Step returns, what fell due has happened. A
// client no queue of this process transfers has nothing to step. It
// returns the first error.
func Step(ctx context.Context, rdb redis.UniversalClient) error {
	var ws []*worker
	if rdb != nil && reflect.TypeOf(rdb).Comparable() {
		registry.mu.Lock()
		s := registry.services[rdb]
		registry.mu.Unlock()
		if s != nil {
			s.mu.Lock()
			for _, w := range s.workers {
				ws = append(ws, w)
			}
			s.mu.Unlock()
		}
	}
	var errs []error
	for _, w := range ws {
		// A worker of its own, as RunOnce: the running worker's
		// goroutine keeps its state; both may run at once, as workers
		// of two processes do.
		step := newWorker(w.t)
		for range maxSteps {
			_, again, err := step.drain(ctx)
			if err != nil {
				errs = append(errs, err)
				break
			}
			if !again {
				break
			}
		}
		w.wake()
	}
	return errors.Join(errs...)
}

// retentions returns, for each key prefix of the service's announced
// queues, the smallest retention they ask for (absent: none sweeps).
func (s *Service) retentions() map[string]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]time.Duration{}
	for _, w := range s.workers {
		r := cmp.Or(w.t.Retention, DefaultRetention)
		if !w.t.Announce || r < 0 {
			continue
		}
		k := w.t.Queue.K.Prefix
		if cur, ok := out[k]; !ok || r < cur {
			out[k] = r
		}
	}
	return out
}

// sweepInterval is the time to the next retention sweep.
func (s *Service) sweepInterval() time.Duration {
	next := sweepMax
	for _, r := range s.retentions() {
		next = min(next, max(r/10, sweepMin))
	}
	return next
}

// sweepRetention forgets the queues that hold nothing and that no process
// announced for the retention of their prefix (at most sweepBatch per
// prefix), and returns the time to the next sweep. Errors are logged at
// debug level: the next sweep tries again.
func (s *Service) sweepRetention(ctx context.Context) time.Duration {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	log := slog.Default()
	for prefix, r := range s.retentions() {
		before := time.Now().Add(-r).UnixMilli()
		// The queues that still hold items stay in the registry: the
		// cursor steps past them, back to the start once at the end.
		names, err := s.c.StaleQueues(ctx, prefix, before, s.sweepFrom[prefix], sweepBatch)
		if err != nil {
			log.Debug("redelay: retention sweep: reading the registry", "prefix", prefix, "err", err)
			continue
		}
		if len(names) < sweepBatch {
			s.sweepFrom[prefix] = 0
		}
		for _, name := range names {
			k, err := keys.For(prefix, name)
			if err != nil {
				continue // not a queue's name: the inspector reports it
			}
			if held, err := s.c.ForgetQueue(ctx, k, before); err != nil {
				log.Debug("redelay: retention sweep: forgetting a queue", "queue", name, "err", err)
			} else if held > 0 {
				if len(names) == sweepBatch {
					s.sweepFrom[prefix]++
				}
			} else {
				log.Debug("redelay: retention sweep: forgot a queue that held nothing", "queue", name, "retention", r)
			}
		}
	}
	return s.sweepInterval()
}
