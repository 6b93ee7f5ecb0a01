-- extend: move the deadlines of leases to now + ARGV[1] ms, one call for
-- every lease a consumer holds. A lease that is gone is left alone.
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- ARGV[1] -> extension in ms, from now
-- ARGV[2..] -> lease tokens
--
-- Output: the new deadline in ms, or 0 for a lease that was lost, one per
-- token.

redis.call('ZCARD', KEYS[1]) -- type check before the first write
local deadline = now_ms() + tonumber(ARGV[1])
local out = {}
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[1], 'XX', deadline, ARGV[i])
    out[i - 1] = deadline
  else
    out[i - 1] = 0
  end
end
return out
