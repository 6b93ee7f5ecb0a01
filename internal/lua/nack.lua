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
