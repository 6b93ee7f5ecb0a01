-- group_purge: drop every ready item of one group of a queue (see Groups
-- in prelude.lua); its items in flight and pending (delayed, retries) stay.
-- Its turn, if out, is dropped when a consumer pops it.
--
-- KEYS[1] -> redelay:{q}:ready   LIST  (names the queue; the group keys
--            are derived from it)
-- ARGV[1] -> the group's key
--
-- Output: how many items were dropped

local G = grp()
local K = G.keys(KEYS[1])
local g = ARGV[1]
local key = G.items(K, g)
local n = redis.call('ZCARD', key)
if n == 0 then
  return 0
end
redis.call('ZCARD', K.size) -- type check before the first write
redis.call('UNLINK', key)
redis.call('HINCRBY', K.meta, 'gready', -n)
G.shrink(K, g, n)
return n
