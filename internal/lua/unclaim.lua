-- unclaim: give back an item that a waiting consumer moved to the claimed
-- list but will not use (its caller gave up before the reply came): it
-- returns to the head of the ready list. Nothing changes when the item is
-- no longer claimed (the reclaimer gave it back already).
--
-- KEYS[1] -> redelay:{q}:claimed    LIST
-- KEYS[2] -> redelay:{q}:ready      LIST
-- ARGV[1] -> the item's bytes
--
-- Output: 1 when the item was given back, else 0.

redis.call('LLEN', KEYS[2]) -- type check before the first write
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
redis.call('RPUSH', KEYS[2], ARGV[1])
return 1
