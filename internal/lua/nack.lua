-- nack: settle a delivery that failed, either by scheduling a retry in the
-- queue's delayed set (due now + ARGV[4] µs) or by moving it to the dead
-- letters. The caller decides which, and passes the envelope re-encoded with
-- the failure recorded in its headers.
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[3] -> redelay:{q}:delayed    ZSET  member seq..field, score due µs
-- KEYS[4] -> redelay:{q}:items      HASH  field -> seq..envelope
-- KEYS[5] -> redelay:{q}:seq        STRING counter
-- KEYS[6] -> redelay:{q}:ready      LIST
-- KEYS[7] -> redelay:{q}:dead:ready LIST
-- ARGV[1] -> lease token
-- ARGV[2] -> envelope to store
-- ARGV[3] -> 'retry' or 'dead'
-- ARGV[4] -> retry delay in µs
-- ARGV[5] -> item ID (the items-hash field, unless a pending item holds it)
-- ARGV[6] -> wake-up channel
--
-- Output: 0 when the lease was lost (nothing changed); 1 retry scheduled;
-- 2 retry ready at once; 3 dead-lettered.

-- schedule puts env, due at due_us (Unix µs), into a queue's delayed set
-- under the items-hash field `field`, or straight onto the ready list when
-- it is due (now_us_ is the server clock) and nothing pending is due before
-- it: the rule offer.lua applies to each offered item. Publishes on channel when the item becomes the earliest pending one.
-- Returns 1 (pending) or 2 (ready).
local function schedule(kDelayed, kItems, kSeq, kReady, field, env, due_us, now_us_, channel)
  if due_us <= now_us_ then
    local head = redis.call('ZRANGE', kDelayed, 0, 0, 'WITHSCORES')
    if head[2] == nil or tonumber(head[2]) > due_us then
      redis.call('LPUSH', kReady, env)
      return 2
    end
  end
  local seq = seq_bytes(redis.call('INCR', kSeq))
  local member = seq .. field
  redis.call('ZADD', kDelayed, us_str(due_us), member)
  redis.call('HSET', kItems, field, seq .. env)
  local head = redis.call('ZRANGE', kDelayed, 0, 0)
  if head[1] == member then
    redis.call('PUBLISH', channel, us_str(due_us))
  end
  return 1
end

if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[3] == 'dead' then
  -- The dead-letter queue counts its own deliveries; the failure that
  -- brought the item here is in its headers.
  local env = ARGV[2]
  if envelope_id(env) then
    env = with_attempt(env, 0)
  end
  redis.call('LPUSH', KEYS[7], env)
  return 3
end
local us = now_us()
local due_us = us + tonumber(ARGV[4])
local field = ARGV[5]
if redis.call('HEXISTS', KEYS[4], field) == 1 then
  -- A new item with this ID was offered meanwhile: keep both.
  field = field .. '#' .. ARGV[1]
end
return schedule(KEYS[3], KEYS[4], KEYS[5], KEYS[6], field, with_due(ARGV[2], math.floor(due_us / 1000)), due_us, us, ARGV[6])
