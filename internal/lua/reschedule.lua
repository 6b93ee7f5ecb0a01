-- reschedule: move one pending item to a new due time, or make it ready
-- now, in one atomic step: the item keeps its ID, value and headers, and
-- is never lost or duplicated whatever transfers, receives or settlements
-- run meanwhile (a script runs alone). O(log N).
--
-- The item is either a pending delayed item, named by its id (ARGV[2] =
-- 'id'), or a retry waiting in the retry set, named by its exact member
-- (ARGV[2] = 'member', found by the caller with a read): the member names
-- one retry, so a retry that moved meanwhile is simply not found.
--
-- A new due time that has passed makes the item ready at once when nothing
-- else pending is due at or before it, as an offer would; 'now' (promote)
-- makes it ready at once in any case. An earlier head due time is
-- published, so transfers set their timers to it at once.
--
-- Every key is read before the first write, so a call that fails changes
-- nothing.
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- KEYS[3] -> redelay:{q}:ready     LIST
-- KEYS[4] -> redelay:{q}:retry     ZSET  member len..nonce..envelope, score due µs
-- KEYS[5] -> redelay:{q}:prio      ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[6] -> redelay:{q}:seq       STRING counter
-- ARGV[1] -> wake-up channel
-- ARGV[2] -> 'id' or 'member'
-- ARGV[3] -> the id, or the retry member
-- ARGV[4] -> 'd' (due ARGV[5] µs from now), 'a' (due at ARGV[5], Unix µs)
--            or 'now' (ready now)
-- ARGV[5] -> the delay or due time in µs ('' for 'now')
--
-- Output: 0 not found (nothing changed); 1 pending at the new due time;
--   2 pushed to the ready list.
local by_id = ARGV[2] == 'id'
local key = ARGV[3]
local env, member, zset
if by_id then
  local v = redis.call('HGET', KEYS[2], key)
  if not v then
    return 0
  end
  member = string.sub(v, 1, SEQ_LEN) .. key
  if not redis.call('ZSCORE', KEYS[1], member) then
    return 0
  end
  env = string.sub(v, SEQ_LEN + 1)
  zset = KEYS[1]
else
  if not redis.call('ZSCORE', KEYS[4], key) then
    return 0
  end
  member = key
  env = retry_envelope(key)
  zset = KEYS[4]
end
ready_check(KEYS[3], KEYS[5]) -- type checks before the first write
redis.call('ZCARD', KEYS[1])
redis.call('ZCARD', KEYS[4])

local us = now_us()
local mode = ARGV[4]
local due_us, score
if mode == 'd' then
  due_us = us + tonumber(ARGV[5])
  score = us_str(due_us)
elseif mode == 'a' then
  due_us = tonumber(ARGV[5])
  score = ARGV[5] -- an integer as the client wrote it: exact
else
  due_us = us
end

local head_before = head_due(KEYS[1], KEYS[4])
redis.call('ZREM', zset, member)
local head = head_due(KEYS[1], KEYS[4]) -- without this item
local ready = mode == 'now' or (due_us <= us and head > due_us)
local stamped = with_due(env, math.floor(due_us / 1000))
if ready then
  if by_id then
    redis.call('HDEL', KEYS[2], key)
  end
  ready_push(KEYS[3], KEYS[5], KEYS[6], {stamped}, false)
  return 2
end
if by_id then
  -- The member keeps its sequence number: ties at the new due time keep
  -- offer order.
  redis.call('ZADD', KEYS[1], score, member)
  redis.call('HSET', KEYS[2], key, string.sub(member, 1, SEQ_LEN) .. stamped)
else
  local nonce = string.sub(key, 2, string.byte(key, 1) + 1)
  redis.call('ZADD', KEYS[4], score, retry_member(nonce, stamped))
end
if due_us < head_before then
  redis.call('PUBLISH', ARGV[1], us_str(due_us))
end
return 1
