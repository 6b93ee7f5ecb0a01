-- receive: take the oldest ready item and lease it to the caller until
-- now + ARGV[1] ms. The lease is named by a fresh token, so two deliveries of
-- items with the same ID never share bookkeeping. The attempt counter in the
-- envelope is incremented: it counts deliveries.
--
-- KEYS[1] -> redelay:{q}:ready      LIST
-- KEYS[2] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[3] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[4] -> redelay:{q}:seq        STRING counter (tokens)
-- KEYS[5] -> redelay:{q}:dead:ready LIST  unreadable envelopes go here as they are
-- ARGV[1] -> visibility timeout in ms
--
-- Output: false when nothing is ready;
--   {token, envelope} for a delivery;
--   {'', reason} when the item was unreadable and moved to the dead letters.

local env = redis.call('RPOP', KEYS[1])
if not env then
  return false
end
local id, why = envelope_id(env)
if not id then
  redis.call('LPUSH', KEYS[5], env)
  return {'', why}
end
env = with_attempt(env, attempt_of(env) + 1)
local token = string.format('%012x', redis.call('INCR', KEYS[4]))
local deadline = now_ms() + tonumber(ARGV[1])
redis.call('ZADD', KEYS[2], deadline, token)
redis.call('HSET', KEYS[3], token, env)
return {token, env}
