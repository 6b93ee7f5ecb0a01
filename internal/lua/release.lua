-- release: give leased items back unhandled (a consumer shutting down with
-- items leased ahead of its handlers, or with handlers it had to stop, or a
-- receive whose caller gave up before the reply came). They return to the
-- head of the ready list, first token first, and no delivery is counted
-- against them. A lease that is gone is skipped, so a second run changes
-- nothing. An item of a group goes back to the head of its group, and
-- its slot in the group is freed (groups_settled). Every key is read before the first write (the counter's value
-- too: seq_check), so a call that fails changes nothing.
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[3] -> redelay:{q}:ready      LIST
-- KEYS[4] -> redelay:{q}:prio       ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[5] -> redelay:{q}:seq        STRING counter (seq_check)
-- ARGV    -> lease tokens, in the order the items were received
--
-- Output: how many were released.

redis.call('ZCARD', KEYS[1]) -- type checks before the first write
ready_check(KEYS[3], KEYS[4])
seq_check(KEYS[5])
local back = {} -- the last one is taken first: ARGV[1]'s
for i = #ARGV, 1, -1 do
  local env = redis.call('HGET', KEYS[2], ARGV[i])
  if env then
    redis.call('HDEL', KEYS[2], ARGV[i])
    redis.call('ZREM', KEYS[1], ARGV[i])
    back[#back + 1] = env
  end
end
ready_push(KEYS[3], KEYS[4], KEYS[5], back, true)
local held = {}
for i = 1, #ARGV do
  held[i] = ARGV[i]
end
groups_settled(string.sub(KEYS[3], 1, -6) .. 'meta', held)
return #back
