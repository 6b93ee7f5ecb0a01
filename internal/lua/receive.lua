-- receive: take up to ARGV[2] of the oldest ready items and lease each to the
-- caller until now + ARGV[1] ms. A lease is named by a fresh token, so two
-- deliveries of items with the same ID never share bookkeeping. Envelopes are
-- leased as they are: their attempt counter counts the deliveries that
-- failed, so this delivery's number is one more (the reclaimer and nack
-- update the counter; receiving, the hot path, never rewrites a value). One
-- call costs the same few commands whatever the count (bounded by caller).
--
-- KEYS[1] -> redelay:{q}:ready      LIST
-- KEYS[2] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[3] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[4] -> redelay:{q}:seq        STRING counter (tokens)
-- KEYS[5] -> redelay:{q}:dead:ready LIST  unreadable envelopes go here as they are
-- ARGV[1] -> visibility timeout in ms
-- ARGV[2] -> how many items at most
--
-- Output: false when nothing is ready; otherwise a flat list of pairs, oldest
--   item first: {token, envelope} for a delivery, {'', reason} for an item
--   that was unreadable and moved to the dead letters.

local envs = redis.call('RPOP', KEYS[1], tonumber(ARGV[2]))
if not envs then
  return false
end
local deadline = now_ms() + tonumber(ARGV[1])
local first = redis.call('INCRBY', KEYS[4], #envs) - #envs
local out, leases, inflight = {}, {}, {}
for i = 1, #envs do
  local env = envs[i]
  if string.byte(env, 1) == ENV_VERSION and #env > ENV_HEADER then
    local token = string.format('%012x', first + i)
    leases[#leases + 1] = deadline
    leases[#leases + 1] = token
    inflight[#inflight + 1] = token
    inflight[#inflight + 1] = env
    out[#out + 1] = token
    out[#out + 1] = env
  else
    local _, why = envelope_id(env)
    redis.call('LPUSH', KEYS[5], env)
    out[#out + 1] = ''
    out[#out + 1] = why or 'unreadable envelope'
  end
end
if #leases > 0 then
  redis.call('ZADD', KEYS[2], unpack(leases))
  redis.call('HSET', KEYS[3], unpack(inflight))
end
return out
