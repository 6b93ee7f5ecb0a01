-- redrive: move up to ARGV[1] dead letters back to the queue's ready list,
-- oldest first, with their attempt counter reset. Bytes that are no
-- envelope move unchanged (they will be dead-lettered again when received).
--
-- KEYS[1] -> redelay:{q}:dead:ready LIST
-- KEYS[2] -> redelay:{q}:ready      LIST
-- ARGV[1] -> batch limit
--
-- Output: how many moved.

redis.call('LLEN', KEYS[2]) -- type check before the first write
local moved = 0
for i = 1, tonumber(ARGV[1]) do
  local env = redis.call('RPOP', KEYS[1])
  if not env then
    break
  end
  if is_envelope(env) then
    env = with_attempt(env, 0)
  end
  redis.call('LPUSH', KEYS[2], env)
  moved = moved + 1
end
return moved
