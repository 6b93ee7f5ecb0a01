-- reclaim: make items whose lease expired ready again, at the head of the
-- list (next to be received), earliest lease first, with the failed delivery
-- counted in the envelope's attempt counter. Items that used up their attempts are not
-- moved: they are returned for the caller to dead-letter with a reason, and
-- their lease is pushed ARGV[3] ms ahead so other reclaimers leave them alone
-- meanwhile (if the caller dies, they come back after that).
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[3] -> redelay:{q}:ready      LIST
-- ARGV[1] -> batch limit
-- ARGV[2] -> max attempts
-- ARGV[3] -> hold for exhausted items, ms
--
-- Output: {moved, next lease deadline ms or -1, server now ms,
--          token1, envelope1, token2, envelope2, ...} for exhausted items.

local now = now_ms()
local tokens = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local max = tonumber(ARGV[2])
local out = {0, -1, now}
local back = {}
for i = 1, #tokens do
  local token = tokens[i]
  local env = redis.call('HGET', KEYS[2], token)
  if not env then
    redis.call('ZREM', KEYS[1], token)
  elseif attempt_of(env) + 1 >= max then
    redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), token)
    out[#out + 1] = token
    out[#out + 1] = env
  else
    back[#back + 1] = with_attempt(env, attempt_of(env) + 1)
    redis.call('HDEL', KEYS[2], token)
    redis.call('ZREM', KEYS[1], token)
  end
end
-- Pushed to the head newest-first, so the longest-leased is received first.
for i = #back, 1, -1 do
  redis.call('RPUSH', KEYS[3], back[i])
end
out[1] = #back
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] ~= nil then
  out[2] = tonumber(head[2])
end
return out
