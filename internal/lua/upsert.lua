-- upsert: offer one delayed item under a duplicate mode (delayed.WithReplace,
-- WithDebounce, WithUniqueFor). Plain offers go through offer.lua, whose
-- batched path this script leaves alone; an upsert is one item per call.
--
--   'R' replace:  if an item with this id is pending, it takes the new
--                 value, headers and due time (same id, same place among
--                 equal due times); otherwise the item is offered.
--   'B' debounce: as replace, but the due time is never later than the
--                 first offer's time (the pending item's enqueued time) +
--                 ARGV[9] µs, so a stream of updates still fires.
--   'U' unique:   refused (status 0) while an item with this id is
--                 pending, or while KEYS[7] exists: it is set for ARGV[9]
--                 µs by the offer that was accepted, and expires by itself,
--                 so the memory held is bounded by the offers of one window.
--
-- A replaced item keeps its first enqueued time (the debounce's anchor). A
-- due time that has passed makes the item ready at once when nothing else
-- pending is due at or before it, as offer.lua does.
--
-- Like offer.lua, a call is recorded under the caller's lane: a resent call
-- returns the first run's outcome and changes nothing; a stale copy is an
-- error. Every key is read before the first write.
--
-- KEYS[1] -> redelay:{q}:delayed    ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items      HASH  id -> seq..envelope
-- KEYS[3] -> redelay:{q}:seq        STRING offer counter
-- KEYS[4] -> redelay:{q}:ready      LIST
-- KEYS[5] -> redelay:{q}:retry      ZSET
-- KEYS[6] -> redelay:{q}:lane:<L>   STRING this caller's last call and its outcome
-- KEYS[7] -> redelay:{q}:unique:<id> STRING (used by mode 'U' only)
-- KEYS[8] -> redelay:{q}:prio       ZSET  ready items of priority 1..9 (ready_push)
-- ARGV[1] -> wake-up channel
-- ARGV[2] -> call nonce (see offer.lua)
-- ARGV[3] -> how long the lane record lives, ms
-- ARGV[4] -> id
-- ARGV[5] -> envelope (times to fill in)
-- ARGV[6] -> 'd' (delay) or 'a' (at)
-- ARGV[7] -> delay in µs (d) or due time in Unix µs (a)
-- ARGV[8] -> 'R', 'B' or 'U'
-- ARGV[9] -> max wait (B) or window (U), µs
-- ARGV[10] -> the queue's bound (blocking.WithMaxSize), 0: none; a new item
--            past it is refused (replacing a pending one adds nothing)
--
-- Output: 0 refused as a duplicate (nothing changed); 1 offered, pending;
--   2 offered, ready; 3 replaced, pending; 4 replaced, ready; 5 refused:
--   the queue is full (nothing changed).

local replay = lane_replay(KEYS[6], ARGV[2])
if replay == false then
  return redis.error_reply('STALE offer call ' .. ARGV[2] .. ': a later call of its lane ran already')
end
if replay then
  return tonumber(replay)
end

local us = now_us()
local now = math.floor(us / 1000)
local id, env, dup = ARGV[4], ARGV[5], ARGV[8]
local due_us, score
if ARGV[6] == 'd' then
  due_us = us + tonumber(ARGV[7])
  score = us_str(due_us)
else
  due_us = tonumber(ARGV[7])
  score = ARGV[7]
end

local old = redis.call('HGET', KEYS[2], id)
local unique_held = dup == 'U' and redis.call('EXISTS', KEYS[7]) == 1
ready_check(KEYS[4], KEYS[8]) -- type checks before the first write
redis.call('ZCARD', KEYS[1])
redis.call('GET', KEYS[3])

local function finish(status)
  lane_record(KEYS[6], ARGV[2], tostring(status), ARGV[3])
  return status
end

if (old and dup == 'U') or unique_held then
  return finish(0)
end
if not old and ARGV[10] ~= '0' then
  local bound = tonumber(ARGV[10])
  if extra().queue_length(KEYS[1], KEYS[5], KEYS[4], KEYS[8], bound - 1) >= bound then
    return finish(5)
  end
end

local enqueued = now
local member
if old then
  member = string.sub(old, 1, SEQ_LEN) .. id
  local old_env = string.sub(old, SEQ_LEN + 1)
  if is_envelope(old_env) then
    enqueued = read_be32(old_env, 2) * 4294967296 + read_be32(old_env, 6)
  end
  if dup == 'B' then
    local latest = enqueued * 1000 + tonumber(ARGV[9])
    if latest < due_us then
      due_us = latest
      score = us_str(due_us)
    end
  end
  redis.call('ZREM', KEYS[1], member) -- back below if it stays pending
end

local head = head_due(KEYS[1], KEYS[5]) -- without this item
local stamped = stamp_deadline(string.sub(env, 1, 1) .. be64(enqueued) .. be64(math.floor(due_us / 1000)) .. string.sub(env, 18), math.floor(due_us / 1000))
if due_us <= us and head > due_us then
  if old then
    redis.call('HDEL', KEYS[2], id)
  end
  ready_push(KEYS[4], KEYS[8], KEYS[3], {stamped}, false)
  if dup == 'U' then
    redis.call('SET', KEYS[7], '1', 'PX', math.max(1, math.floor(tonumber(ARGV[9]) / 1000)))
  end
  if old then
    return finish(4)
  end
  return finish(2)
end
if not member then
  member = seq_bytes(redis.call('INCR', KEYS[3])) .. id
end
redis.call('ZADD', KEYS[1], score, member)
redis.call('HSET', KEYS[2], id, string.sub(member, 1, SEQ_LEN) .. stamped)
if dup == 'U' then
  redis.call('SET', KEYS[7], '1', 'PX', math.max(1, math.floor(tonumber(ARGV[9]) / 1000)))
end
if due_us < head then
  redis.call('PUBLISH', ARGV[1], us_str(due_us))
end
if old then
  return finish(3)
end
return finish(1)
