package blocking

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redelay/redelay/codec"
	"github.com/redelay/redelay/internal/envelope"
	"github.com/redelay/redelay/internal/lua"
	"github.com/redelay/redelay/internal/queue"
)

// Queue is a typed, Redis-backed FIFO queue of T. It is safe for concurrent
// use by many goroutines and by many processes sharing the Redis server.
type Queue[T any] struct {
	core *queue.Core

	deadMu sync.Mutex
	dead   *Queue[T] // created by the first DeadLetters call
}

// New returns the queue called name on rdb (any redis.UniversalClient:
// *redis.Client, *redis.ClusterClient, a failover client, a Ring).
//
// New never fails: a nil client, a bad name or a bad option makes every
// call return an error wrapping [ErrInvalidQueue] that names the problem.
// New starts nothing; the first Take or Poll starts this process's transfer
// of the queue's due delayed items, which runs until [Queue.Close].
func New[T any](rdb redis.UniversalClient, name string, opts ...Option) *Queue[T] {
	o := options{cfg: queue.Config{Codec: codec.Msgpack()}}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return &Queue[T]{core: queue.New(rdb, name, o.cfg, o.err)}
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.core.Keys.Name }

// Core is the queue's untyped machinery, for the other redelay packages
// (delayed.New). Applications have no use for it.
func (q *Queue[T]) Core() *queue.Core { return q.core }

// Offer appends v to the queue, ready to take now.
func (q *Queue[T]) Offer(ctx context.Context, v T) error {
	if err := q.core.Err(); err != nil {
		return err
	}
	id := queue.NewID()
	ctx, span, headers := q.core.Tel.StartSend(ctx, id, 0)
	err := q.offer(ctx, id, v, headers)
	q.core.Tel.Sent(ctx, span, offered(err), err)
	return err
}

// offered is how many items an offer that ended with err stored.
func offered(err error) int {
	if err != nil {
		return 0
	}
	return 1
}

func (q *Queue[T]) offer(ctx context.Context, id string, v T, headers map[string]string) error {
	env, err := q.core.Encode(id, v, headers)
	if err != nil {
		return fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	if err := lua.Push.Run(ctx, q.core.RDB, []string{q.core.Keys.Ready}, env).Err(); err != nil {
		return fmt.Errorf("offer %s: %w", q.Name(), err)
	}
	return nil
}

// Take removes and returns the oldest ready item, waiting as long as ctx
// allows for one to arrive. When ctx ends it returns ctx.Err() (test with
// errors.Is). Delivery is at most once: an item taken by a process that then
// crashes is gone.
//
// An item that cannot be decoded is moved to the dead letters (and logged);
// Take goes on to the next one.
func (q *Queue[T]) Take(ctx context.Context) (T, error) {
	v, _, err := q.take(ctx, time.Time{})
	return v, err
}

// Poll is Take with a time limit: ok is false, with a nil error, when
// timeout passes with nothing ready. Sub-second timeouts are honoured; a zero
// timeout takes a ready item without waiting.
func (q *Queue[T]) Poll(ctx context.Context, timeout time.Duration) (v T, ok bool, err error) {
	if timeout < 0 {
		return v, false, fmt.Errorf("poll %s: negative timeout %v", q.Name(), timeout)
	}
	return q.take(ctx, time.Now().Add(timeout))
}

func (q *Queue[T]) take(ctx context.Context, deadline time.Time) (T, bool, error) {
	var zero T
	if err := q.core.StartTransfer(); err != nil {
		return zero, false, err
	}
	start := time.Now()
	for {
		raw, err := q.pop(ctx, deadline)
		if err != nil || raw == nil {
			return zero, false, err
		}
		v, e, err := q.decode(raw)
		if err == nil {
			q.core.Tel.Received(ctx, start, e.ID, e.Attempt+1, e.DueAt, e.Headers)
			return v, true, nil
		}
		q.deadLetterPoison(ctx, raw, err)
	}
}

// pop waits for one raw item; nil, nil when the deadline passes.
func (q *Queue[T]) pop(ctx context.Context, deadline time.Time) ([]byte, error) {
	// The command runs without ctx's cancellation: if go-redis aborted a
	// blocking pop mid-reply, the popped item would be lost with the
	// connection. The block is short instead, and ctx is checked between.
	cmdCtx := context.WithoutCancel(ctx)
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("take %s: %w", q.Name(), err)
		}
		block := q.core.BlockFor(ctx)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left < time.Millisecond {
				// Out of time (or Poll(ctx, 0)): one last look, without blocking.
				raw, err := q.core.RDB.RPop(cmdCtx, q.core.Keys.Ready).Bytes()
				if errors.Is(err, redis.Nil) {
					return nil, nil
				}
				if err != nil {
					return nil, fmt.Errorf("take %s: %w", q.Name(), err)
				}
				return raw, nil
			}
			block = min(block, left)
		}
		secs := strconv.FormatFloat(block.Seconds(), 'f', 3, 64)
		res, err := q.core.RDB.Do(cmdCtx, "BRPOP", q.core.Keys.Ready, secs).StringSlice()
		switch {
		case errors.Is(err, redis.Nil):
			continue
		case err != nil:
			return nil, fmt.Errorf("take %s: %w", q.Name(), err)
		case len(res) != 2:
			return nil, fmt.Errorf("take %s: unexpected BRPOP reply %q", q.Name(), res)
		}
		return []byte(res[1]), nil
	}
}

func (q *Queue[T]) decode(raw []byte) (T, envelope.Envelope, error) {
	var v T
	e, err := envelope.Unmarshal(raw)
	if err != nil {
		return v, e, err
	}
	if err := q.core.Cfg.Codec.Unmarshal(e.Payload, &v); err != nil {
		return v, e, fmt.Errorf("item %s: decode with %s codec: %w", e.ID, q.core.Cfg.Codec.Name(), err)
	}
	return v, e, nil
}

// deadLetterPoison keeps an undecodable item on the dead-letter list, with
// the reason in its headers when its envelope is readable (unchanged
// otherwise), instead of returning it or losing it.
func (q *Queue[T]) deadLetterPoison(ctx context.Context, raw []byte, reason error) {
	dead := q.core.Keys.DeadReady
	out, id := envelope.WithError(raw, reason.Error())
	log := q.core.Cfg.Logger.With("queue", q.Name(), "id", id, "reason", reason.Error(), "bytes", len(raw))
	if err := q.core.RDB.LPush(context.WithoutCancel(ctx), dead, out).Err(); err != nil {
		log.Error("redelay: undecodable item could not be dead-lettered and is dropped", "err", err)
		return
	}
	q.core.Tel.DeadLettered(ctx, 1)
	log.Warn("redelay: undecodable item moved to dead letters", "dead_letter_list", dead)
}

// Size returns the number of items ready to take.
func (q *Queue[T]) Size(ctx context.Context) (int64, error) {
	if err := q.core.Err(); err != nil {
		return 0, err
	}
	n, err := q.core.RDB.LLen(ctx, q.core.Keys.Ready).Result()
	if err != nil {
		return 0, fmt.Errorf("size %s: %w", q.Name(), err)
	}
	return n, nil
}

// Close stops the background work this queue (and its DeadLetters queue)
// started in this process: the transfer of due items and the reclaiming of
// expired leases. Items stay in Redis, leased ones included: they come back
// after their visibility timeout. Calls after Close return [ErrClosed].
// Closing twice is harmless. Close does not wait for a running Consume: end
// its context first.
func (q *Queue[T]) Close() error {
	err := q.core.Close()
	q.deadMu.Lock()
	dead := q.dead
	q.deadMu.Unlock()
	if dead != nil {
		_ = dead.Close() // and its own dead letters, if anyone opened them
	}
	return err
}
