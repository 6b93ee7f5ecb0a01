-- group_pause: pause or resume one group of a queue (see Groups in
-- prelude.lua). A paused group delivers nothing: its turn, if out, is
-- dropped when a consumer pops it; its leases run on. Resuming gives it a
-- turn at the back of the line when it has ready items.
--
-- KEYS[1] -> redelay:{q}:ready   LIST  (names the queue; the group keys
--            are derived from it)
-- ARGV[1] -> 'pause' or 'resume'
-- ARGV[2] -> the group's key
--
-- Output: 1 when this changed the group's state, 0 when it was so already

local G = grp()
local K = G.keys(KEYS[1])
local g = ARGV[2]
redis.call('LLEN', K.ready) -- type checks before the first write
redis.call('SCARD', K.paused)
if ARGV[1] == 'pause' then
  return redis.call('SADD', K.paused, g)
end
local n = redis.call('SREM', K.paused, g)
if n == 1 and redis.call('EXISTS', G.items(K, g)) == 1 then
  G.turn(K, g)
end
return n
