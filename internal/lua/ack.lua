-- ack: the delivery named by ARGV[1] is done; forget it.
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- ARGV[1] -> lease token
--
-- Output: 1, or 0 when the lease was lost (reclaimed, or already settled).

if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
return 1
