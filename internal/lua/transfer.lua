-- transfer: move up to ARGV[1] due items, earliest first, from the delayed
-- set to the ready list. One call is one atomic move: no item is moved twice
-- or lost, however many processes run it at once. The batch bound keeps each
-- call short; the caller repeats while batches come back full.
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- KEYS[3] -> redelay:{q}:ready     LIST
-- ARGV[1] -> batch limit (at most a few thousand: results are unpacked)
--
-- Output: {moved, next due µs or -1 when nothing is pending, server now ms,
--          server now µs}

local us = now_us()
local now = math.floor(us / 1000)

local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', us_str(us), 'LIMIT', 0, tonumber(ARGV[1]))
local n = #members
if n > 0 then
  local ids = {}
  for i = 1, n do
    ids[i] = string.sub(members[i], SEQ_LEN + 1)
  end
  local vals = redis.call('HMGET', KEYS[2], unpack(ids))
  local envs = {}
  for i = 1, n do
    if vals[i] then
      envs[#envs + 1] = string.sub(vals[i], SEQ_LEN + 1)
    end
  end
  if #envs > 0 then
    redis.call('LPUSH', KEYS[3], unpack(envs))
  end
  redis.call('HDEL', KEYS[2], unpack(ids))
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - 1)
end

local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
local nextDue = -1
if head[2] ~= nil then
  nextDue = tonumber(head[2])
end
return {n, nextDue, now, us}
