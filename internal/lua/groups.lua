-- groups: a page of a queue's groups, largest first (ready + in flight;
-- see Groups in prelude.lua), with each one's counts. Changes nothing.
--
-- KEYS[1] -> redelay:{q}:ready   LIST  (names the queue; the group keys
--            are derived from it: <base>:gsize, :gflight, :gpaused, :g:<g>)
-- ARGV[1] -> offset
-- ARGV[2] -> how many at most
--
-- Output: {groups with items, then per group: key, ready, in flight,
--          1 when paused else 0}

local G = grp()
local K = G.keys(KEYS[1])
local off, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {redis.call('ZCARD', K.size)}
if n <= 0 then
  return out
end
local page = redis.call('ZREVRANGE', K.size, off, off + n - 1)
for i = 1, #page do
  local g = page[i]
  out[#out + 1] = g
  out[#out + 1] = redis.call('ZCARD', G.items(K, g))
  out[#out + 1] = tonumber(redis.call('HGET', K.flight, g) or '0')
  out[#out + 1] = redis.call('SISMEMBER', K.paused, g)
end
return out
