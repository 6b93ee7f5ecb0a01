package contestants

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register("redisson-algo", func() Contestant { return &Redisson{} })
}

// Redisson re-creates, in Go with go-redis, the algorithm of Redisson's
// RDelayedQueue (the JVM client itself cannot run here): the same keys, the
// same Lua scripts (offer, transfer, remove by value), the same scheduling
// of the transfer (a client-side timer set to the head's score, re-armed
// through pub/sub, on the client's clock), and consumers blocked in BLPOP
// on the destination list, as RBlockingQueue.take does. Values are encoded
// as JSON (Redisson's codecs differ in size, not in algorithm).
type Redisson struct {
	rdb    *redis.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	wake   chan int64
	pad    string
}

const (
	rsDest    = "bench"
	rsTimeout = "redisson_delay_queue_timeout:{bench}"
	rsOrder   = "redisson_delay_queue:{bench}"
	rsChannel = "redisson_delay_queue_channel:{bench}"
	// rsBatch is the transfer's LIMIT, as in Redisson.
	rsBatch = 100
	// rsConsumers is how many goroutines BLPOP at once.
	rsConsumers = 8
)

// KEYS: dest, timeout zset, order list, channel. ARGV: due ms, random id, value.
var rsOffer = redis.NewScript(`
local value = struct.pack('Bc0Lc0', string.len(ARGV[2]), ARGV[2], string.len(ARGV[3]), ARGV[3]);
redis.call('zadd', KEYS[2], ARGV[1], value);
redis.call('rpush', KEYS[3], value);
local v = redis.call('zrange', KEYS[2], 0, 0);
if v[1] == value then
  redis.call('publish', KEYS[4], ARGV[1]);
end;
`)

// KEYS: dest, timeout zset, order list. ARGV: now ms, limit.
var rsTransfer = redis.NewScript(`
local expiredValues = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, ARGV[2]);
if #expiredValues > 0 then
  for i, v in ipairs(expiredValues) do
    local randomId, value = struct.unpack('Bc0Lc0', v);
    redis.call('rpush', KEYS[1], value);
    redis.call('lrem', KEYS[3], 1, v);
  end;
  redis.call('zrem', KEYS[2], unpack(expiredValues));
end;
local v = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if v[1] ~= nil then
  return v[2];
end
return nil;
`)

// KEYS: order list, timeout zset. ARGV: value. Redisson's remove(Object):
// a scan of the order list for the value.
var rsRemove = redis.NewScript(`
local s = redis.call('llen', KEYS[1]);
for i = 0, s - 1, 1 do
  local v = redis.call('lindex', KEYS[1], i);
  local randomId, value = struct.unpack('Bc0Lc0', v);
  if ARGV[1] == value then
    redis.call('zrem', KEYS[2], v);
    redis.call('lrem', KEYS[1], 1, v);
    return 1;
  end;
end;
return 0;
`)

func (r *Redisson) Name() string { return "redisson-algo" }

func (r *Redisson) Settings() string {
	return "RDelayedQueue algorithm re-created in Go (go-redis): transfer LIMIT 100, client clock, 8 BLPOP consumers, JSON values"
}

func (r *Redisson) Setup(ctx context.Context, addr string) error {
	r.rdb = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	if err := r.rdb.Ping(ctx).Err(); err != nil {
		return err
	}
	if err := rsOffer.Load(ctx, r.rdb).Err(); err != nil {
		return err
	}
	r.wake = make(chan int64, 1)
	var sctx context.Context
	sctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	// As in Redisson, the RDelayedQueue instance itself runs the transfer
	// task from the moment it is created.
	sub := r.rdb.Subscribe(sctx, rsChannel)
	if _, err := sub.Receive(ctx); err != nil {
		return err
	}
	r.wg.Go(func() {
		defer sub.Close()
		ch := sub.Channel()
		for {
			select {
			case <-sctx.Done():
				return
			case m, ok := <-ch:
				if !ok {
					return
				}
				if ms, err := strconv.ParseInt(m.Payload, 10, 64); err == nil {
					r.notify(ms)
				}
			}
		}
	})
	r.wg.Go(func() { r.scheduler(sctx) })
	r.notify(0) // on subscribe, Redisson runs the transfer once
	return nil
}

func (r *Redisson) notify(ms int64) {
	for {
		select {
		case r.wake <- ms:
			return
		default:
		}
		select {
		case old := <-r.wake:
			ms = min(ms, old)
		default:
		}
	}
}

// scheduler is QueueTransferTask: one pending timer, set to the earliest
// start time heard of; a start time under 10 ms away runs at once.
func (r *Redisson) scheduler(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	next := int64(-1) // ms of the armed timer, -1 when none
	arm := func(ms int64) {
		if next != -1 && next <= ms {
			return
		}
		next = ms
		d := time.Until(time.UnixMilli(ms))
		if d < 10*time.Millisecond {
			d = 0
		}
		timer.Reset(d)
	}
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ms := <-r.wake:
			arm(ms)
		case <-timer.C:
			next = -1
			head, err := rsTransfer.Run(ctx, r.rdb, []string{rsDest, rsTimeout, rsOrder},
				time.Now().UnixMilli(), rsBatch).Text()
			switch {
			case errors.Is(err, redis.Nil):
			case err != nil:
				if ctx.Err() != nil {
					return
				}
				arm(time.Now().Add(time.Second).UnixMilli())
			default:
				if f, err := strconv.ParseFloat(head, 64); err == nil {
					arm(int64(f))
				}
			}
		}
	}
}

// SetPadding implements Contestant: the padding is a field of the JSON
// value.
func (r *Redisson) SetPadding(n int) { r.pad = padding(n) }

func (r *Redisson) encode(id int) []byte {
	b, _ := json.Marshal(Item{ID: id, Pad: r.pad})
	return b
}

func (r *Redisson) Offer(ctx context.Context, id int, due time.Time) error {
	var rid [8]byte
	_, _ = rand.Read(rid[:])
	return ignoreNil(rsOffer.Run(ctx, r.rdb, []string{rsDest, rsTimeout, rsOrder, rsChannel},
		due.UnixMilli(), rid[:], r.encode(id)).Err())
}

func (r *Redisson) Cancel(ctx context.Context, id int) error {
	return ignoreNil(rsRemove.Run(ctx, r.rdb, []string{rsOrder, rsTimeout}, r.encode(id)).Err())
}

func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

func (r *Redisson) Consume(ctx context.Context, arrived func(id int)) error {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	prev := r.cancel
	r.cancel = func() { cancel(); prev() }
	for range rsConsumers {
		r.wg.Go(func() {
			for cctx.Err() == nil {
				res, err := r.rdb.BLPop(context.WithoutCancel(cctx), time.Second, rsDest).Result()
				if err != nil {
					if !errors.Is(err, redis.Nil) {
						time.Sleep(10 * time.Millisecond)
					}
					continue
				}
				var it Item
				if json.Unmarshal([]byte(res[1]), &it) == nil {
					arrived(it.ID)
				}
			}
		})
	}
	return nil
}

func (r *Redisson) Close() error {
	if r.cancel != nil {
		r.cancel()
	}
	r.wg.Wait()
	if r.rdb != nil {
		return r.rdb.Close()
	}
	return nil
}
