-- group_purge: drop every ready item of one group of a queue (see Groups
-- in prelude.lua), or one of them (ARGV[2]); its items in flight and
-- pending (delayed, retries) stay. Its turn, if out, is dropped when a
-- consumer pops it.
--
-- KEYS[1] -> redelay:{q}:ready   LIST  (names the queue; the group keys
--            are derived from it)
-- ARGV[1] -> the group's key
-- ARGV[2] -> a member of the group's set to drop alone, or '' for all
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
if ARGV[2] ~= '' then
  n = redis.call('ZREM', key, ARGV[2])
  if n == 0 then
    return 0
  end
else
  redis.call('UNLINK', key)
end
redis.call('HINCRBY', K.meta, 'gready', -n)
G.shrink(K, g, n)
return n
