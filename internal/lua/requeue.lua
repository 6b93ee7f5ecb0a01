-- requeue: move one dead letter, found by the caller with a read, back to
-- the queue's ready list with its attempt counter reset and without a
-- deadline, as redrive.lua does for the first ones: named by its member
-- when the dead-letter queue gave it back to its priority set, else by
-- its exact bytes in the dead letters' list. Nothing changes when it is
-- no longer there (taken, redriven or purged meanwhile).
--
-- KEYS[1] -> redelay:{q}:dead:ready LIST
-- KEYS[2] -> redelay:{q}:ready      LIST
-- KEYS[3] -> redelay:{q}:prio       ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[4] -> redelay:{q}:seq        STRING counter
-- KEYS[5] -> redelay:{q}:dead:prio  ZSET  dead letters of priority the
--                                         dead-letter queue gave back
-- ARGV[1] -> the dead letter's bytes
-- ARGV[2] -> its member in KEYS[5], or '' for one in KEYS[1]
--
-- Output: 1 when it moved, else 0.
ready_check(KEYS[2], KEYS[3]) -- type checks before the first write
local gone
if ARGV[2] ~= '' then
  gone = redis.call('ZREM', KEYS[5], ARGV[2]) == 0
else
  gone = redis.call('LREM', KEYS[1], 1, ARGV[1]) == 0
end
if gone then
  return 0
end
local env = ARGV[1]
if is_envelope(env) then
  env = without_deadline(with_attempt(env, 0))
end
ready_push(KEYS[2], KEYS[3], KEYS[4], {env}, false)
return 1
