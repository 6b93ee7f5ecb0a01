-- confirm: take a claimed item for good (Take, after its blocking wait
-- moved the item to the claimed list): it leaves the claimed list and, when
-- it has not expired, counts as processed (count_settled). An item no
-- longer claimed (taken by an earlier send of this very call, or given back
-- by the reclaimer) changes nothing and counts nothing.
--
-- A call that fails changes nothing: every key is read first.
--
-- KEYS[1] -> redelay:{q}:claimed    LIST
-- KEYS[2] -> redelay:{q}:meta       HASH  processed (count_settled)
-- KEYS[3] -> redelay:{q}:history    HASH  processed per minute
-- ARGV[1] -> the claimed envelope
--
-- Output: 1 when it was claimed (and is now taken), 0 otherwise

redis.call('LLEN', KEYS[1])
count_check(KEYS[2], KEYS[3])
local n = redis.call('LREM', KEYS[1], 1, ARGV[1])
if n == 1 and not expired(ARGV[1], now_ms()) then
  count_settled(KEYS[2], KEYS[3], 'p', 1)
end
return n
