-- stats: a queue's counts by state, its pause flag, how long its oldest
-- ready item has waited and when its next pending item falls due, in one
-- call on the server's clock. It changes nothing. O(log N).
--
-- KEYS[1] -> redelay:{q}:delayed    ZSET
-- KEYS[2] -> redelay:{q}:retry      ZSET
-- KEYS[3] -> redelay:{q}:ready      LIST  (oldest item at the right end)
-- KEYS[4] -> redelay:{q}:inflight   HASH
-- KEYS[5] -> redelay:{q}:claimed    LIST  items being handed to a consumer
-- KEYS[6] -> redelay:{q}:dead:ready LIST
-- KEYS[7] -> redelay:{q}:meta       HASH  paused
--
-- Output: {delayed, retry, ready, inflight (leased + claimed), dead,
--   paused 0|1, due ms of the oldest ready item or -1, next due µs or -1,
--   server now µs}
local us = now_us()
local oldest = -1
local last = redis.call('LINDEX', KEYS[3], -1)
if last and is_envelope(last) then
  oldest = read_be32(last, 10) * 4294967296 + read_be32(last, 14)
end
local next_due = head_due(KEYS[1], KEYS[2])
if next_due == math.huge then
  next_due = -1
end
local paused = 0
if redis.call('HEXISTS', KEYS[7], 'paused') == 1 then
  paused = 1
end
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  redis.call('LLEN', KEYS[3]),
  redis.call('HLEN', KEYS[4]) + redis.call('LLEN', KEYS[5]),
  redis.call('LLEN', KEYS[6]),
  paused,
  oldest,
  next_due,
  us,
}
