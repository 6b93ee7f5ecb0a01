-- unclaim: give back an item that a waiting consumer moved to the claimed
-- list but will not use (its caller gave up before the reply came): it
-- returns to the head of the ready list. Nothing changes when the item is
-- no longer claimed (the reclaimer gave it back already).
--
-- KEYS[1] -> redelay:{q}:claimed    LIST
-- KEYS[2] -> redelay:{q}:ready      LIST
-- KEYS[3] -> redelay:{q}:prio       ZSET  ready items of priority 1..9 (list_push)
-- KEYS[4] -> redelay:{q}:seq        STRING counter
-- ARGV[1] -> the item's bytes
--
-- Output: 1 when the item was given back, else 0.

ready_check(KEYS[2], KEYS[3]) -- type checks before the first write
if redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0 then
  return 0
end
list_push(KEYS[2], KEYS[3], KEYS[4], {ARGV[1]}, true) -- it was in the ready list
return 1
