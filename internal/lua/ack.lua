-- ack: settle received items for good (Delivery.Ack): each lease token
-- still held leaves the in-flight hash and the lease set, and counts as
-- processed (count_settled). A token already gone (settled by an earlier
-- send of this very call, or taken back by the reclaimer) changes nothing
-- and counts nothing, so a resend counts each item once. A lease of a
-- group frees its slot in the group (groups_settled).
--
-- A call that fails changes nothing: every key is read before it is written,
-- but the in-flight hash, which is written first (its HDEL fails on a key
-- of the wrong type before anything changed).
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[3] -> redelay:{q}:meta       HASH  processed (count_settled)
-- KEYS[4] -> redelay:{q}:history    HASH  processed per minute
-- ARGV    -> the lease tokens
--
-- Output: per token, 1 when it was held (and is now settled), 0 when gone

redis.call('ZCARD', KEYS[1])
local grouped = count_check(KEYS[3], KEYS[4], true)
local out, held = {}, {}
for i = 1, #ARGV do
  local n = redis.call('HDEL', KEYS[2], ARGV[i])
  out[i] = n
  if n == 1 then
    held[#held + 1] = ARGV[i]
  end
end
if #held > 0 then
  redis.call('ZREM', KEYS[1], unpack(held))
end
count_settled(KEYS[3], KEYS[4], 'p', #held)
groups_settled(KEYS[3], held, grouped)
return out
