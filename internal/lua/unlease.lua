-- unlease: drop a leased item and its lease, atomically (an operator's
-- delete); a lease of a group frees its slot in the group
-- (groups_settled). Its consumer's Ack or Nack then finds the lease lost.
--
-- KEYS[1] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[2] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[3] -> redelay:{q}:meta       HASH  (names the queue's group keys)
-- ARGV[1] -> the lease token
--
-- Output: 1 when the lease was held (and is now dropped), 0 when gone

redis.call('ZCARD', KEYS[2]) -- type checks before the first write
local n = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if n == 1 then
  groups_settled(KEYS[3], {ARGV[1]})
end
return n
