-- offer: add one item to the delayed set, or straight to the ready list when
-- it is already due and nothing pending is due before it.
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- KEYS[3] -> redelay:{q}:seq       STRING offer counter
-- KEYS[4] -> redelay:{q}:ready     LIST
-- ARGV[1] -> id
-- ARGV[2] -> envelope (version byte, 16 bytes of times to fill in, rest)
-- ARGV[3] -> "delay" or "at"
-- ARGV[4] -> delay in µs (mode delay) or due time in Unix µs (mode at)
-- ARGV[5] -> wake-up channel, published to when this item becomes the earliest
--
-- Output: {status, due ms (rounded down), server now ms}
--   status 1: pending in the delayed set; 2: pushed to the ready list;
--   0: an item with this id is already pending (nothing changed).
-- Due times use the server clock (TIME), so producers' clocks do not matter.

if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then
  return {0, 0, 0}
end

local us = now_us()
local due_us
if ARGV[3] == 'delay' then
  due_us = us + tonumber(ARGV[4])
else
  due_us = tonumber(ARGV[4])
end
local now, due = math.floor(us / 1000), math.floor(due_us / 1000)

local env = string.sub(ARGV[2], 1, 1) .. be64(now) .. be64(due) .. string.sub(ARGV[2], 18)
return {schedule(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], env, due_us, us, ARGV[5]), due, now}
