package contestants

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

func init() {
	Register("seed-poll", func() Contestant { return &SeedPoll{} })
}

// SeedPoll is the usual recipe: a ZSET scored by due time in ms, polled once
// a second by one consumer loop with an atomic pop of up to 1000 due items.
type SeedPoll struct {
	rdb    *redis.Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
	pad    string
}

const seedKey = "seed:delayed"

// KEYS: zset. ARGV: now ms, limit.
var seedPop = redis.NewScript(`
local due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
if #due > 0 then
  redis.call('zrem', KEYS[1], unpack(due))
end
return due
`)

func (s *SeedPoll) Name() string { return "seed-poll" }

func (s *SeedPoll) Settings() string {
	return "ZADD; one loop popping up to 1000 due items once a second (Lua ZRANGEBYSCORE+ZREM)"
}

// SetPadding implements Contestant: the recipe stores the value as the ZSET
// member, so a padded member is "<id>:<padding>".
func (s *SeedPoll) SetPadding(n int) {
	s.pad = ""
	if n > 0 {
		s.pad = ":" + padding(n)
	}
}

func (s *SeedPoll) member(id int) string { return strconv.Itoa(id) + s.pad }

func (s *SeedPoll) Setup(ctx context.Context, addr string) error {
	s.rdb = redis.NewClient(&redis.Options{Addr: addr, PoolSize: 32})
	return s.rdb.Ping(ctx).Err()
}

func (s *SeedPoll) Offer(ctx context.Context, id int, due time.Time) error {
	return s.rdb.ZAdd(ctx, seedKey, redis.Z{Score: float64(due.UnixMilli()), Member: s.member(id)}).Err()
}

func (s *SeedPoll) Cancel(ctx context.Context, id int) error {
	return s.rdb.ZRem(ctx, seedKey, s.member(id)).Err()
}

func (s *SeedPoll) Consume(ctx context.Context, arrived func(id int)) error {
	var cctx context.Context
	cctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
			due, err := seedPop.Run(cctx, s.rdb, []string{seedKey}, time.Now().UnixMilli(), 1000).StringSlice()
			if err != nil && !errors.Is(err, redis.Nil) {
				continue
			}
			for _, m := range due {
				idStr, _, _ := strings.Cut(m, ":")
				if id, err := strconv.Atoi(idStr); err == nil {
					arrived(id)
				}
			}
		}
	})
	return nil
}

func (s *SeedPoll) Close() error {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	if s.rdb != nil {
		return s.rdb.Close()
	}
	return nil
}
