-- extend: move a lease's deadline to now + ARGV[2] ms.
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- ARGV[1] -> lease token
-- ARGV[2] -> extension in ms, from now
--
-- Output: the new deadline in ms, or 0 when the lease was lost.

if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then
  return 0
end
local deadline = now_ms() + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[1])
return deadline
