// Package queue is the untyped core shared by the blocking and delayed
// packages: the client, the keys, the codec, the settings, the envelope
// encoding and the lazily started transfer registration of one queue.
package queue

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/keys"
	"github.com/redelay/redelay/tracing"
	"github.com/redelay/redelay/transfer"
)

// Sentinel errors, re-exported by the public packages.
var (
	ErrInvalidQueue    = errors.New("redelay: invalid queue")
	ErrClosed          = errors.New("redelay: queue closed")
	ErrPayloadTooLarge = errors.New("redelay: payload too large")
)

// DefaultMaxPayload bounds an encoded value unless configured otherwise.
const DefaultMaxPayload = 1 << 20

// MaxBlock is the longest single server-side block of a blocking pop. Take
// and Poll loop such blocks and check their context between them, so a
// cancelled context is noticed within this time without go-redis having to
// watch the context on the socket.
const MaxBlock = 500 * time.Millisecond

// Config is the settings of one queue.
type Config struct {
	Codec      codec.Codec
	Logger     *slog.Logger
	MaxPayload int
	BatchSize  int
	Sweep      time.Duration
	// Visibility is how long a received item stays leased to its receiver.
	Visibility time.Duration
	// MaxAttempts is how many deliveries an item gets before it is
	// dead-lettered.
	MaxAttempts int
	// Telemetry selects the OpenTelemetry providers (nil: the globals).
	Telemetry tracing.Config
}

// Defaults for at-least-once delivery.
const (
	DefaultVisibility  = 30 * time.Second
	DefaultMaxAttempts = transfer.DefaultMaxAttempts
)

// Core is one queue's shared machinery.
type Core struct {
	RDB   redis.UniversalClient
	Keys  keys.Queue
	Cfg   Config
	Tel   *tracing.Queue // spans and metrics of this queue
	err   error
	block time.Duration // MaxBlock, or less when the client's read timeout is short

	mu          sync.Mutex
	reg         *transfer.Registration // started by StartTransfer
	closed      bool
	stopGauging func()
}

// New validates its arguments; a problem is kept and returned by every call
// (see Err), so constructors never fail.
func New(rdb redis.UniversalClient, name string, cfg Config, optErr error) *Core {
	c := &Core{RDB: rdb, Cfg: cfg}
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
	k, err := keys.New(name)
	switch {
	case rdb == nil:
		c.err = fmt.Errorf("%w: nil Redis client", ErrInvalidQueue)
	case err != nil:
		c.err = fmt.Errorf("%w: %w", ErrInvalidQueue, err)
	case optErr != nil:
		c.err = fmt.Errorf("%w: %w", ErrInvalidQueue, optErr)
	case cfg.Codec == nil:
		c.err = fmt.Errorf("%w: nil codec", ErrInvalidQueue)
	case c.Cfg.MaxPayload < 0:
		c.err = fmt.Errorf("%w: negative max payload size", ErrInvalidQueue)
	}
	c.Keys = k
	c.block = blockFor(rdb)
	c.instrument()
	return c
}

// instrument creates the queue's telemetry and registers its depth gauge.
func (c *Core) instrument() {
	if c.err != nil {
		c.stopGauging = func() {}
		return
	}
	c.Tel = tracing.New(c.Cfg.Telemetry, c.Keys.Name)
	c.stopGauging = c.Tel.RegisterDepth(c.depths)
}

// depths reads the queue's depth by state in one round trip.
func (c *Core) depths(ctx context.Context) (delayed, ready, inflight, dead int64, err error) {
	k := c.Keys
	var cmds [4]*redis.IntCmd
	_, err = c.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmds[0] = p.ZCard(ctx, k.Delayed)
		cmds[1] = p.LLen(ctx, k.Ready)
		cmds[2] = p.HLen(ctx, k.Inflight)
		cmds[3] = p.LLen(ctx, k.DeadReady)
		return nil
	})
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("depth of %s: %w", k.Name, err)
	}
	return cmds[0].Val(), cmds[1].Val(), cmds[2].Val(), cmds[3].Val(), nil
}

// Invalid returns a core whose every call fails with ErrInvalidQueue and why.
func Invalid(why error) *Core {
	return &Core{err: fmt.Errorf("%w: %w", ErrInvalidQueue, why), Cfg: Config{Logger: slog.Default()}, stopGauging: func() {}}
}

// Child returns the core of a queue sharing c's hash tag and settings.
func (c *Core) Child(sub string) *Core {
	cc := &Core{RDB: c.RDB, Keys: c.Keys.Child(sub), Cfg: c.Cfg, err: c.err, block: c.block}
	cc.instrument()
	return cc
}

// Err is the construction error, or ErrClosed after Close.
func (c *Core) Err() error {
	if c.err != nil {
		return c.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	return nil
}

// BlockFor is how long one server-side block may last for a call with ctx:
// the client's limit (see blockFor), or less when ctx's deadline is nearer,
// so a short deadline is honoured promptly. At least 1 ms.
func (c *Core) BlockFor(ctx context.Context) time.Duration {
	b := c.block
	if dl, ok := ctx.Deadline(); ok {
		b = min(b, time.Until(dl))
	}
	return max(b, time.Millisecond)
}

// blockFor keeps a blocking pop shorter than the client's read timeout:
// go-redis gives a raw command only ReadTimeout, and a command that times out
// on the socket loses its reply (an item popped but never read).
func blockFor(rdb redis.UniversalClient) time.Duration {
	var rt time.Duration
	switch x := rdb.(type) {
	case *redis.Client:
		rt = x.Options().ReadTimeout
	case *redis.ClusterClient:
		rt = x.Options().ReadTimeout
	case *redis.Ring:
		rt = x.Options().ReadTimeout
	default:
		rt = 3 * time.Second // go-redis's default
	}
	if rt <= 0 { // no read timeout
		return MaxBlock
	}
	return max(min(MaxBlock, rt/3), time.Millisecond)
}

// NewID returns a random 16-character ID (96 bits, URL-safe base64).
func NewID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Encode marshals v and wraps it in an envelope; the times are left for the
// script to fill in from the server clock.
func (c *Core) Encode(id string, v any, headers map[string]string) ([]byte, error) {
	payload, err := c.Cfg.Codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode with %s codec: %w", c.Cfg.Codec.Name(), err)
	}
	if c.Cfg.MaxPayload > 0 && len(payload) > c.Cfg.MaxPayload {
		return nil, fmt.Errorf("%w: %d bytes encoded, limit %d (blocking.WithMaxPayloadSize)", ErrPayloadTooLarge, len(payload), c.Cfg.MaxPayload)
	}
	e := envelope.Envelope{ID: id, Headers: headers, Payload: payload}
	return e.Marshal(), nil
}

// StartTransfer makes sure this process transfers the queue's due items,
// until Close. Idempotent.
func (c *Core) StartTransfer() error {
	if err := c.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reg != nil {
		return nil
	}
	r, err := c.register()
	if err != nil {
		return err
	}
	c.reg = r
	return nil
}

// Register adds a transfer registration owned by the caller (delayed.Queue
// holds one of its own, released by its Close).
func (c *Core) Register() (*transfer.Registration, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	return c.register()
}

func (c *Core) register() (*transfer.Registration, error) {
	r, err := transfer.Register(c.RDB, transfer.Target{
		Keys: c.Keys, BatchSize: c.Cfg.BatchSize, Sweep: c.Cfg.Sweep, Logger: c.Cfg.Logger,
		MaxAttempts: c.Cfg.MaxAttempts, Telemetry: c.Tel,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidQueue, err)
	}
	return r, nil
}

// Close stops the background work this core started. Idempotent.
func (c *Core) Close() error {
	c.mu.Lock()
	reg := c.reg
	c.reg = nil
	stop := c.stopGauging
	c.stopGauging = func() {}
	c.closed = true
	c.mu.Unlock()
	if reg != nil {
		reg.Close()
	}
	if stop != nil {
		stop()
	}
	return nil
}
