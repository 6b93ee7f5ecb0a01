package queue

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/internal/mover"
	"github.com/redelay/redelay/internal/store"
	"github.com/redelay/redelay/internal/telemetry"
)

// DefaultMaxPayload bounds an encoded value unless configured otherwise.
const DefaultMaxPayload = 1 << 20

// MaxDue is the latest due time a queue can hold: due times are sorted-set
// scores in Unix microseconds, exact in a double up to 2^53 (June 2255).
var MaxDue = time.UnixMicro(1 << 53) //nolint:gochecknoglobals // a constant of type time.Time

// closeWait bounds how long Close waits for calls it interrupted to finish
// in the background (a blocking wait ends within one block), so that what
// they took goes back while the client is still open.
const closeWait = time.Second

// Config is the settings of one queue.
type Config struct {
	Codec      codec.Codec
	Logger     *slog.Logger
	MaxPayload int // 0: DefaultMaxPayload; -1: no limit
	BatchSize  int
	Sweep      time.Duration
	// Visibility is how long a received item stays leased to its receiver.
	Visibility time.Duration
	// MaxAttempts is how many deliveries an item gets before it is
	// dead-lettered; MaxAttemptsSet says the user chose it, and then it is
	// recorded in Redis for every process when this one starts consuming.
	MaxAttempts    int
	MaxAttemptsSet bool
	// Telemetry selects the OpenTelemetry providers (nil: the globals).
	Telemetry telemetry.Config
	// MaxSize bounds the items pending plus ready (0: no bound); offers
	// past it are refused with ErrQueueFull.
	MaxSize int64
	// Partitions is the number of partitions (0 or 1: one, the layout of
	// a queue without partitions).
	Partitions int
	// MaxEnvelopeVersion makes the queue read envelopes as a reader of
	// that version would (tests of rolling upgrades); 0: envelope.Version.
	MaxEnvelopeVersion int
	// ReplicaAck is how many replicas must confirm each offer, ack and
	// nack (WAIT), within ReplicaAckTimeout; 0: none are waited for.
	ReplicaAck        int
	ReplicaAckTimeout time.Duration
	// ReplicaAckSet says WithReplicaAck was given (its arguments are
	// checked against the client at New).
	ReplicaAckSet bool
	// Prefix replaces "redelay" at the start of every key ("": keep it).
	Prefix string
	// Retention is how long a queue of the prefix that holds nothing and
	// that no process announced is kept before this process's sweep
	// forgets it (mover.Target.Retention).
	Retention time.Duration
	// DeadMax and DeadMaxAge bound the dead letters (0: no bound);
	// DeadBoundsSet says WithDeadLetterBounds was given, and then they
	// are recorded in Redis for every process when this one starts.
	DeadMax       int64
	DeadMaxAge    time.Duration
	DeadBoundsSet bool
}

// Defaults for at-least-once delivery.
const (
	DefaultVisibility  = 30 * time.Second
	DefaultMaxAttempts = store.DefaultMaxAttempts
)

// part is one partition of a queue: its keys, settings, telemetry and
// what this process runs for it (its transfer and reclaimer, the
// batchers of its offers, acks and receives), and how Close stops them.
type part struct {
	Store *store.Partition // nil when err is set
	Keys  keys.Set
	Cfg   Config
	Tel   *telemetry.Recorder // spans and metrics of this queue
	srv   *mover.Server       // what is known of the client's server
	err   error
	child bool // a queue of another's keys (the dead letters)

	lanes  lanes
	offers batcher[store.OfferItem, offerRes]
	acks   batcher[[]*Lease, []error]
	leases batcher[int, leaseOut]
	pops   batcher[int, [][]byte]
	layout *layout // shared by the partitions of one queue; nil when err is set
	// bound is the queue's WithMaxSize; Cfg.MaxSize is this partition's
	// share of it (all of it without partitions).
	bound int64

	closing chan struct{} // closed by Close: blocked calls return ErrClosed
	bg      store.Calls   // calls given up on, finishing in the background

	mu            sync.Mutex
	closed        bool
	reg           *mover.Registration // started by StartBackground
	stopGauge     func()
	maxWritten    bool                                             // MaxAttempts recorded in Redis
	boundsWritten bool                                             // DeadMax and DeadMaxAge recorded in Redis
	gauges        func(context.Context) (telemetry.Reading, error) // what the gauges read; nil: Stats (set by assemble)
}

// New validates its arguments; a problem is kept and returned by every call
// (see Err), so constructors never fail. New makes no network call and
// starts nothing.
func New(rdb redis.UniversalClient, name string, cfg Config, optErr error) *part {
	c := &part{Cfg: cfg, closing: make(chan struct{})}
	if cfg.Logger == nil {
		c.Cfg.Logger = slog.Default()
	}
	if cfg.MaxPayload == 0 {
		c.Cfg.MaxPayload = DefaultMaxPayload
	}
	if cfg.Visibility == 0 {
		c.Cfg.Visibility = DefaultVisibility
	}
	if cfg.MaxAttempts == 0 {
		c.Cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.MaxEnvelopeVersion == 0 {
		c.Cfg.MaxEnvelopeVersion = envelope.Version
	}
	k, err := keys.For(cfg.Prefix, name)
	c.Keys = k
	cerr := CheckClient(rdb)
	switch {
	case cerr != nil:
		c.err = fmt.Errorf("%w: %w", ErrInvalidQueue, cerr)
	case err != nil:
		c.err = fmt.Errorf("%w: %w", ErrInvalidQueue, err)
	case optErr != nil:
		c.err = fmt.Errorf("%w: %w", ErrInvalidQueue, optErr)
	case cfg.Codec == nil:
		c.err = fmt.Errorf("%w: nil codec", ErrInvalidQueue)
	case cfg.Partitions != 0:
		if perr := checkPartitions(cfg.Partitions); perr != nil {
			c.err = fmt.Errorf("%w: %w", ErrInvalidQueue, perr)
		} else if cfg.MaxSize > 0 && cfg.MaxSize < int64(cfg.Partitions) {
			c.err = fmt.Errorf("%w: WithMaxSize(%d) with WithPartitions(%d): the bound must be at least the number of partitions", ErrInvalidQueue, cfg.MaxSize, cfg.Partitions)
		}
	}
	// A partitioned queue bounds each partition at its share, rounded
	// down, so that the queue never holds more than its bound (one script
	// cannot count every partition: they are on other slots).
	c.bound = cfg.MaxSize
	if cfg.Partitions > 1 {
		c.Cfg.MaxSize = cfg.MaxSize / int64(cfg.Partitions)
	}
	if c.err == nil {
		sc := store.New(rdb)
		c.srv = mover.ServerOf(rdb)
		sc.LimitBlock(c.srv.Block())
		if cfg.ReplicaAckSet {
			if err := sc.CheckReplicaAck(cfg.ReplicaAck, cfg.ReplicaAckTimeout); err != nil {
				c.err = fmt.Errorf("%w: WithReplicaAck(%d, %v): %w", ErrInvalidQueue, cfg.ReplicaAck, cfg.ReplicaAckTimeout, err)
				return c
			}
		}
		c.Store = sc.Partition(k)
		c.Store.SetReplicaAck(cfg.ReplicaAck, cfg.ReplicaAckTimeout)
		c.Cfg.Telemetry.ServerAddress, c.Cfg.Telemetry.ServerPort = telemetry.ServerOf(rdb)
		c.Cfg.Telemetry.ErrorType = ErrorType
		c.Tel = telemetry.New(c.Cfg.Telemetry, k.Name)
		c.layout = &layout{n: max(cfg.Partitions, 1), meta: c.Store}
	}
	c.initBatchers()
	return c
}

// CheckClient says why rdb cannot hold a queue: nil (also a nil pointer
// of a client type, which would panic on first use), or a *redis.Ring,
// which moves keys to another shard when one is unreachable and would
// split a queue's items, leases and retries between shards.
func CheckClient(rdb redis.UniversalClient) error {
	if rdb == nil {
		return errors.New("nil Redis client")
	}
	if v := reflect.ValueOf(rdb); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("nil %T", rdb)
	}
	if _, ok := rdb.(*redis.Ring); ok {
		return errors.New("a *redis.Ring is not supported: it moves keys to another shard when one is unreachable, which would split a queue's items, leases and retries between shards; use a *redis.ClusterClient")
	}
	return nil
}

// invalidPart returns a part whose every call fails with ErrInvalidQueue and why.
func invalidPart(why error) *part {
	return &part{err: fmt.Errorf("%w: %w", ErrInvalidQueue, why), Cfg: Config{Logger: slog.Default()}, closing: make(chan struct{})}
}

// Child returns the part of a queue sharing c's hash tag and settings: the
// dead letters, which expire nothing (see Deadlines).
func (c *part) Child(sub string) *part {
	cc := c.sibling(c.Keys.Child(sub))
	cc.child = true
	if cc.Store != nil {
		cc.Store.SetDeadLetters()
	}
	return cc
}

// sibling returns a part over the keys k with c's settings, layout, bound
// and server.
func (c *part) sibling(k keys.Set) *part {
	p := &part{Keys: k, Cfg: c.Cfg, err: c.err, layout: c.layout, bound: c.bound, srv: c.srv, closing: make(chan struct{})}
	if c.err == nil {
		p.Store = c.Store.Client().Partition(k)
		p.Store.SetReplicaAck(c.Cfg.ReplicaAck, c.Cfg.ReplicaAckTimeout)
		p.Tel = telemetry.New(c.Cfg.Telemetry, k.Name)
	}
	p.initBatchers()
	return p
}

// Name is the queue's name.
func (c *part) Name() string { return c.Keys.Name }

// Deadlines reports whether the queue expires items past their deadline
// (WithTTL): every queue but a dead-letter queue, whose items have none
// (an item's deadline ends when it is dead-lettered; one dead-lettered by
// a release that kept it is not expired either).
func (c *part) Deadlines() bool { return !c.child }

// now is the time on the server's clock as this process keeps it
// (mover.Server.Now): the time checks made here, outside a script, read
// it, so that a test kit that moves the server's clock moves them too.
func (c *part) now() time.Time { return c.srv.Now() }

// Err is the construction error, or ErrClosed after Close.
func (c *part) Err() error {
	if c.err != nil {
		return c.err
	}
	if err := c.layout.failed(); err != nil {
		return err
	}
	select {
	case <-c.closing:
		return ErrClosed
	default:
		return nil
	}
}

// Closing is closed when the queue is closed.
func (c *part) Closing() <-chan struct{} { return c.closing }

// Call runs a short store call: the caller stops waiting when ctx ends (the
// call finishes in the background, then late, if not nil, gets its result).
func Call[R any](ctx context.Context, c *part, f func(context.Context) (R, error), late func(R, error)) (R, error) {
	if err := c.layout.check(ctx, &c.bg); err != nil {
		var zero R
		return zero, err
	}
	return store.Await(ctx, nil, &c.bg, f, late)
}

// Wait runs a call that may block: the caller stops waiting when ctx ends
// or the queue closes (then the error wraps ErrClosed).
func Wait[R any](ctx context.Context, c *part, f func(context.Context) (R, error), late func(R, error)) (R, error) {
	if err := c.layout.check(ctx, &c.bg); err != nil {
		var zero R
		return zero, err
	}
	v, err := store.Await(ctx, c.closing, &c.bg, f, late)
	if errors.Is(err, store.ErrStopped) {
		err = ErrClosed
	}
	return v, err
}

// Background runs f in a goroutine that Close waits for (briefly).
func (c *part) Background(f func()) { c.bg.Go(f) }

// NewID returns a random 16-character ID (96 bits, URL-safe base64).
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// NewToken returns a random 11-character token (64 bits): lease-token
// prefixes and lane names.
func NewToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// MaxIDLen bounds an ID the caller gives an item, in bytes.
const MaxIDLen = 256

// OfferID validates an offer's ID (given says the caller chose one) and
// headers, and returns the ID to use: the caller's, or a new one.
func OfferID(id string, given bool, headers map[string]string) (string, error) {
	switch {
	case given && id == "":
		return "", fmt.Errorf("empty id: %w", ErrInvalidArgument)
	case len(id) > MaxIDLen:
		return "", fmt.Errorf("id of %d bytes, at most %d: %w", len(id), MaxIDLen, ErrInvalidArgument)
	}
	if err := CheckHeaders(headers); err != nil {
		return "", err
	}
	if !given {
		id = NewID()
	}
	return id, nil
}

// OfferResult is what an offer of id that ended with err returns: the ID
// with a nil error; the ID with an error whose outcome is unknown (sent,
// maybe stored) or that says the item was stored but replicas did not
// confirm it (ErrNotReplicated); no ID with any other error (not stored).
func OfferResult(id string, err error) (string, error) {
	var unknown *OfferOutcomeUnknown
	if err == nil || errors.As(err, &unknown) || errors.Is(err, ErrNotReplicated) {
		return id, err
	}
	return "", err
}

// ReservedPrefix starts the header names redelay writes itself.
const ReservedPrefix = "redelay-"

// Limits on producer headers.
const (
	MaxHeaders   = 64
	MaxHeaderKey = 256
)

// CheckHeaders validates producer headers: at most MaxHeaders, keys not
// empty, at most MaxHeaderKey bytes, and not starting with ReservedPrefix.
func CheckHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return fmt.Errorf("%d headers, at most %d: %w", len(h), MaxHeaders, ErrInvalidArgument)
	}
	for k := range h {
		switch {
		case k == "":
			return fmt.Errorf("empty header name: %w", ErrInvalidArgument)
		case len(k) > MaxHeaderKey:
			return fmt.Errorf("header name of %d bytes, at most %d: %w", len(k), MaxHeaderKey, ErrInvalidArgument)
		case strings.HasPrefix(strings.ToLower(k), ReservedPrefix):
			return fmt.Errorf("header %q: names starting with %q are reserved: %w", k, ReservedPrefix, ErrInvalidArgument)
		}
	}
	return nil
}

// Encode marshals v and wraps it in an envelope with headers (the
// producer's, then the trace context), a priority (0..
// envelope.MaxPriority), a TTL (0: none) and a group ("": none), all
// checked by the caller;
// the times (and the deadline) are left for the script to fill in from the
// server clock. The payload plus the headers must fit the queue's max
// payload size.
func (c *part) Encode(id string, v any, user, trace map[string]string, priority int, ttl time.Duration, group string) ([]byte, error) {
	payload, err := c.Cfg.Codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode with %s codec: %w", c.Cfg.Codec.Name(), err)
	}
	headers := user
	if len(trace) > 0 {
		if len(user) == 0 {
			headers = trace
		} else {
			headers = make(map[string]string, len(user)+len(trace))
			for k, v := range user {
				headers[k] = v
			}
			for k, v := range trace {
				headers[k] = v
			}
		}
	}
	size := len(payload)
	for k, v := range user {
		size += len(k) + len(v)
	}
	if c.Cfg.MaxPayload > 0 && size > c.Cfg.MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes encoded, limit %d (blocking.WithMaxPayloadSize)", ErrPayloadTooLarge, size, c.Cfg.MaxPayload)
	}
	e := envelope.Envelope{ID: id, Headers: headers, Payload: payload}
	e.SetPriority(priority)
	e.SetTTL(ttl)
	e.SetGroup(group)
	return e.Marshal(), nil
}

// Decode unmarshals an envelope, as a reader of Cfg.MaxEnvelopeVersion;
// bytes it cannot read return an error marked with ErrCorrupt.
func (c *part) Decode(raw []byte) (envelope.Envelope, error) {
	e, err := envelope.UnmarshalUpTo(raw, c.Cfg.MaxEnvelopeVersion)
	return e, Corrupt(err)
}

// Unmarshal decodes stored data with c, as c.Unmarshal does, except that a
// codec that panics on the data returns an error naming the codec and the
// panic (wrapping the panic's value when it is an error). msgpack panics on
// ordinary input (a nil pointer field read into a struct field), and a
// panic there would crash the consumer, again for each consumer the item
// comes back to; the error makes the item take the path of any payload its
// codec refuses: retried, then dead-lettered with the reason. Every decode
// of stored data goes through it.
func Unmarshal(c codec.Codec, data []byte, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if perr, ok := r.(error); ok {
				err = fmt.Errorf("%s: panic: %w", c.Name(), perr)
			} else {
				err = fmt.Errorf("%s: panic: %v", c.Name(), r)
			}
		}
	}()
	return c.Unmarshal(data, v)
}

// StartBackground makes sure this process works for the queue while it is
// open: transfers its due items and reclaims its expired leases, reports its
// depth, and records its max attempts in Redis when the user chose one.
// Called by every consuming call; only the first does anything (the
// recording is tried again until it succeeds).
func (c *part) StartBackground(ctx context.Context) error {
	if err := c.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.reg == nil {
		r, err := c.register()
		if err != nil {
			c.mu.Unlock()
			return err
		}
		c.reg = r
		switch {
		case c.Keys.Part != 0: // partition 0 reports the whole queue
			c.stopGauge = func() {}
		case c.gauges != nil:
			c.stopGauge = c.Tel.RegisterGauges(c.gauges)
		default:
			c.stopGauge = c.Tel.RegisterGauges(c.reading)
		}
		if c.Keys.Part == 0 {
			stopDepth, stopEviction := c.stopGauge, c.Tel.RegisterEviction(c.srv.Known)
			c.stopGauge = func() { stopDepth(); stopEviction() }
		}
	}
	record := c.Cfg.MaxAttemptsSet && !c.maxWritten
	bounds := c.Cfg.DeadBoundsSet && !c.boundsWritten
	c.mu.Unlock()
	if record {
		c.recordMaxAttempts(ctx)
	}
	if bounds {
		c.recordDeadBounds(ctx)
	}
	return nil
}

// recordDeadBounds writes the queue's dead-letter bounds to Redis, where
// the scripts that dead-letter read them (dead_bound and dead_expire in
// prelude.lua).
func (c *part) recordDeadBounds(ctx context.Context) {
	_, err := Call(ctx, c, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.Store.SetDeadBounds(ctx, c.Cfg.DeadMax, c.Cfg.DeadMaxAge)
	}, nil)
	if err != nil {
		return // tried again by the next call
	}
	c.mu.Lock()
	c.boundsWritten = true
	c.mu.Unlock()
}

// reading is what the queue's gauges report: its Stats, one script call.
func (c *part) reading(ctx context.Context) (telemetry.Reading, error) {
	st, err := c.Stats(ctx)
	if err != nil {
		return telemetry.Reading{}, err
	}
	return telemetry.Reading{
		Delayed: st.Delayed, Retry: st.Retry, Ready: st.Ready, Inflight: st.Inflight, Dead: st.Dead,
		Paused: st.Paused, Latency: st.Latency(), DeadDropped: st.DeadDropped,
	}, nil
}

// recordMaxAttempts writes the queue's limit to Redis, where every process
// reads it, and says so when it replaces another process's.
func (c *part) recordMaxAttempts(ctx context.Context) {
	prev, err := Call(ctx, c, func(ctx context.Context) (int64, error) {
		return c.Store.SetMaxAttempts(ctx, c.Cfg.MaxAttempts)
	}, nil)
	if err != nil {
		return // tried again by the next call
	}
	c.mu.Lock()
	c.maxWritten = true
	c.mu.Unlock()
	if prev != 0 && prev != int64(c.Cfg.MaxAttempts) {
		c.Cfg.Logger.Warn("redelay: max attempts changed for every process of this queue",
			"queue", c.Name(), "was", prev, "now", c.Cfg.MaxAttempts)
	}
}

// checkServer has the eviction policy of the client's server read, and
// warned of, in the background when a check is due (mover.Server), so
// that a process that only offers warns too. Offers call it: nothing but
// an atomic load and a clock read when no check is due.
func (c *part) checkServer() {
	if !c.srv.Claim() {
		return
	}
	c.bg.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), mover.CheckTimeout)
		defer cancel()
		c.srv.Check(ctx, c.Store.Client(), c.Cfg.Logger)
	})
}

// Register adds a transfer registration owned by the caller (delayed.Queue
// holds one of its own, released by its Close).
func (c *part) Register() (*mover.Registration, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	return c.register()
}

func (c *part) register() (*mover.Registration, error) {
	r, err := mover.Register(mover.Target{
		Queue: c.Store, BatchSize: c.Cfg.BatchSize, Sweep: c.Cfg.Sweep, Logger: c.Cfg.Logger,
		MaxAttempts: c.Cfg.MaxAttempts, Telemetry: c.Tel,
		Announce: !c.child && c.Keys.Part == 0, Codec: c.Cfg.Codec.Name(), Retention: c.Cfg.Retention,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidQueue, err)
	}
	return r, nil
}

// Close stops the background work this part started, makes blocked calls
// return ErrClosed, and waits a little (closeWait at most, so that it
// returns promptly while Redis is unreachable) for the calls it interrupted
// to give back what they took. Idempotent.
func (c *part) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.closing)
	reg, stop := c.reg, c.stopGauge
	c.reg, c.stopGauge = nil, nil
	c.mu.Unlock()
	c.offers.halt()
	c.acks.halt()
	c.leases.halt()
	c.pops.halt()
	if stop != nil {
		stop()
	}
	// The transfer waits for its own call in flight, for at most a second
	// too: the two waits overlap, so Close takes about a second at most.
	regClosed := make(chan struct{})
	go func() {
		if reg != nil {
			reg.Close()
		}
		close(regClosed)
	}()
	defer func() { <-regClosed }()
	if !c.bg.Wait(closeWait) {
		c.Cfg.Logger.Warn("redelay: closed with Redis calls still in flight; they finish in the background", "queue", c.Name())
	}
	return nil
}

// CheckDue validates a due time.
func CheckDue(due time.Time) error {
	if due.IsZero() || due.Before(time.UnixMicro(1)) || due.After(MaxDue) {
		return fmt.Errorf("due time %v out of range (1970 to %v): %w", due, MaxDue.UTC().Format(time.DateOnly), ErrInvalidArgument)
	}
	return nil
}

// PastTolerance is how long ago a due time may be and still count as
// now for a reschedule: a "now" computed a moment before the check (a
// duration of 0 from the server's clock, a clock a little behind) is not
// refused.
const PastTolerance = time.Second

// CheckNotPast refuses a reschedule's due time that passed more than
// PastTolerance before now: a mistyped year would otherwise make the item
// ready at once with a due time that makes Stats.Latency read years.
func CheckNotPast(due, now time.Time) error {
	if due.Before(now.Add(-PastTolerance)) {
		return fmt.Errorf("due time %s has passed (now %s): %w", due.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339), ErrInvalidArgument)
	}
	return nil
}

// MaxGroupLen bounds a group's key, in bytes: an ID's bound.
const MaxGroupLen = MaxIDLen

// CheckGroup validates a group key (blocking.WithGroup): not empty, at
// most MaxGroupLen bytes, UTF-8.
func CheckGroup(g string) error { return checkName("group key", g, MaxGroupLen) }

// checkName validates a name given by the caller (what it names): not
// empty, at most max bytes, UTF-8.
func checkName(what, s string, max int) error {
	switch {
	case s == "":
		return fmt.Errorf("empty %s: %w", what, ErrInvalidArgument)
	case len(s) > max:
		return fmt.Errorf("%s of %d bytes, at most %d: %w", what, len(s), max, ErrInvalidArgument)
	case !utf8.ValidString(s):
		return fmt.Errorf("%s %q is not UTF-8: %w", what, s, ErrInvalidArgument)
	}
	return nil
}

// CheckPriority validates an item's priority: 0..envelope.MaxPriority.
func CheckPriority(p int) error {
	if p < 0 || p > envelope.MaxPriority {
		return fmt.Errorf("priority %d out of range 0..%d: %w", p, envelope.MaxPriority, ErrInvalidArgument)
	}
	return nil
}

// MaxTTL bounds an item's time to live (WithTTL).
const MaxTTL = 10 * 365 * 24 * time.Hour

// CheckTTL validates an item's time to live: 0 (none), or 1 ms to MaxTTL.
func CheckTTL(d time.Duration) error {
	if d != 0 && (d < time.Millisecond || d > MaxTTL) {
		return fmt.Errorf("TTL %v out of range (1ms to 10 years): %w", d, ErrInvalidArgument)
	}
	return nil
}

// Expired reports whether an envelope read from Redis is past its deadline
// (a TTL) at now.
func Expired(e envelope.Envelope, now time.Time) bool {
	dl, ok := e.Deadline()
	return ok && now.After(dl)
}

// CheckDelay validates a delay from now.
func CheckDelay(what string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("negative %s %v: %w", what, d, ErrInvalidArgument)
	}
	if now := time.Now(); now.Add(d).After(MaxDue) || now.Add(d).Before(now) {
		return fmt.Errorf("%s %v out of range (due after %v): %w", what, d, MaxDue.UTC().Format(time.DateOnly), ErrInvalidArgument)
	}
	return nil
}
