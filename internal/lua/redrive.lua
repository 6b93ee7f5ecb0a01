-- redrive: move up to ARGV[1] dead letters back to the queue's ready list,
-- oldest first, with their attempt counter reset and without a deadline
-- (one a release that kept deadlines dead-lettered with its item): a
-- redriven item starts anew. Bytes that are no envelope move unchanged
-- (they will be dead-lettered again when received).
-- Every key is read before the first write (the counter's value too:
-- seq_check), so a call that fails changes nothing.
--
-- KEYS[1] -> redelay:{q}:dead:ready LIST
-- KEYS[2] -> redelay:{q}:ready      LIST
-- KEYS[3] -> redelay:{q}:prio       ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[4] -> redelay:{q}:seq        STRING counter (seq_check)
-- ARGV[1] -> batch limit
--
-- Output: how many moved.

ready_check(KEYS[2], KEYS[3]) -- type checks before the first write
seq_check(KEYS[4])
local moved = 0
for i = 1, tonumber(ARGV[1]) do
  local env = redis.call('RPOP', KEYS[1])
  if not env then
    break
  end
  if is_envelope(env) then
    env = without_deadline(with_attempt(env, 0))
  end
  ready_push(KEYS[2], KEYS[3], KEYS[4], {env}, false)
  moved = moved + 1
end
return moved
