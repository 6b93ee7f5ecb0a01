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
-- KEYS[7] -> redelay:{q}:meta       HASH  paused, processed, failed
-- KEYS[8] -> redelay:{q}:prio       ZSET  ready items of priority 1..9
-- KEYS[9] -> redelay:{q}:dead:prio  ZSET  dead letters of priority the
--                                         dead-letter queue gave back
--
-- Output: {delayed, retry, ready (X.ready_len: the list's and the priority set's),
--   inflight (leased + claimed), dead (the dead-letter queue's ready items,
--   counted as X.ready_len counts),
--   paused 0|1, due ms of the oldest ready item or -1, next due µs or -1,
--   server now µs, processed, failed (count_settled's totals), dead
--   letters dropped by the queue's bounds (dead_bound, dead_expire)}
local us = now_us()
local oldest = -1
local function consider(env)
  if env and is_envelope(env) then
    local due = read_be32(env, 10) * 4294967296 + read_be32(env, 14)
    if oldest == -1 or due < oldest then
      oldest = due
    end
  end
end
-- The oldest ready item: the ready list's tail (past the marker), or the
-- first of one priority in the priority set.
local tail = redis.call('LRANGE', KEYS[3], -2, -1)
for i = #tail, 1, -1 do
  if tail[i] ~= PRIO_MARKER then
    consider(tail[i])
    break
  end
end
local queued = redis.call('ZCARD', KEYS[8])
if queued > 0 then
  for p = 1, PRIO_MAX do
    local lo = (PRIO_MAX - p) * PRIO_BAND
    local first = redis.call('ZRANGEBYSCORE', KEYS[8], string.format('%.0f', lo),
      '(' .. string.format('%.0f', lo + PRIO_BAND), 'LIMIT', 0, 1)
    if first[1] then
      consider(string.sub(first[1], SEQ_LEN + 1))
    end
  end
end
-- Groups (see Groups in prelude.lua): the first item of each of the
-- largest GROUPS_READ groups; the oldest of a queue of more groups may be
-- in another one (docs/keys.md, "Groups").
local GROUPS_READ = 100
if redis.call('HEXISTS', KEYS[7], 'gready') == 1 then
  local base = string.sub(KEYS[3], 1, -6)
  local gs = redis.call('ZREVRANGE', base .. 'gsize', 0, GROUPS_READ - 1)
  for i = 1, #gs do
    local first = redis.call('ZRANGE', base .. 'g:' .. gs[i], 0, 0)
    if first[1] then
      consider(string.sub(first[1], SEQ_LEN + 1))
    end
  end
end
local next_due = head_due(KEYS[1], KEYS[2])
if next_due == math.huge then
  next_due = -1
end
local meta = redis.call('HMGET', KEYS[7], 'paused', 'processed', 'failed', 'dead_dropped')
local paused = 0
if meta[1] then
  paused = 1
end
return {
  redis.call('ZCARD', KEYS[1]),
  redis.call('ZCARD', KEYS[2]),
  extra().ready_len(KEYS[3], KEYS[8]),
  redis.call('HLEN', KEYS[4]) + redis.call('LLEN', KEYS[5]),
  extra().ready_len(KEYS[6], KEYS[9]),
  paused,
  oldest,
  next_due,
  us,
  tonumber(meta[2]) or 0,
  tonumber(meta[3]) or 0,
  tonumber(meta[4]) or 0,
}
