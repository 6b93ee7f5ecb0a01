-- redrive: move up to ARGV[1] dead letters back to the queue's ready list,
-- in the order the dead-letter queue hands them out (take_ready: those of
-- priority it gave back first, then the oldest), with their attempt
-- counter reset and without a deadline (one a release that kept deadlines
-- dead-lettered with its item): a redriven item starts anew. The dead
-- letters' priority marker stays behind. Bytes that are no envelope move
-- unchanged (they will be dead-lettered again when received). Every key
-- is read before the first write (the counter's value too: seq_check), so
-- a call that fails changes nothing.
--
-- KEYS[1] -> redelay:{q}:dead:ready LIST
-- KEYS[2] -> redelay:{q}:ready      LIST
-- KEYS[3] -> redelay:{q}:prio       ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[4] -> redelay:{q}:seq        STRING counter (seq_check)
-- KEYS[5] -> redelay:{q}:dead:prio  ZSET  dead letters of priority the
--                                         dead-letter queue gave back
-- ARGV[1] -> batch limit (a few hundred: the batch is unpacked)
--
-- Output: how many moved.

ready_check(KEYS[2], KEYS[3]) -- type checks before the first write
ready_check(KEYS[1], KEYS[5])
seq_check(KEYS[4])
local envs = take_ready(KEYS[1], KEYS[5], tonumber(ARGV[1]), true)
for i = 1, #envs do
  if is_envelope(envs[i]) then
    envs[i] = without_deadline(with_attempt(envs[i], 0))
  end
end
ready_push(KEYS[2], KEYS[3], KEYS[4], envs, false)
return #envs
