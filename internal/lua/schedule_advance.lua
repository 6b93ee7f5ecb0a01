-- schedule_advance: materialize the next ticks of a recurring schedule as
-- delayed items, and advance its state, in one atomic step. Any number of
-- processes run it, none of them a leader: the call is a compare-and-set
-- on the schedule's record (the client read it and planned the ticks from
-- it), so only the first call for a given state does anything and every
-- tick is offered once; a resent call finds the record advanced and does
-- nothing. Each tick's item has an ID stable for that tick (name@time),
-- and an item with that ID already pending is left alone.
--
-- A tick whose time has passed (a missed tick the policy keeps) goes to
-- the ready list at once when nothing pending is due before it, as an
-- offer would.
--
-- KEYS[1] -> redelay:{q}:delayed           ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items             HASH  id -> seq..envelope
-- KEYS[3] -> redelay:{q}:seq               STRING offer counter
-- KEYS[4] -> redelay:{q}:ready             LIST
-- KEYS[5] -> redelay:{q}:retry             ZSET
-- KEYS[6] -> redelay:{q}:schedules         HASH  name -> record
-- KEYS[7] -> redelay:{q}:schedules:values  HASH  name -> tick envelope (empty ID)
-- KEYS[8] -> redelay:{q}:schedules:due     ZSET  name -> when to materialize (ms)
-- KEYS[9] -> redelay:{q}:prio                ZSET  ready items of priority 1..9 (ready_push)
-- ARGV[1] -> wake-up channel
-- ARGV[2] -> name
-- ARGV[3] -> the record the client read
-- ARGV[4] -> the new record
-- ARGV[5] -> when to materialize the next tick, Unix ms
-- ARGV[6..] -> pairs: tick item ID, tick time in Unix µs
--
-- Output: the number of ticks offered; -1 when the record changed or is
--   gone (nothing changed).
local rec = redis.call('HGET', KEYS[6], ARGV[2])
if rec ~= ARGV[3] then
  if not rec then
    redis.call('ZREM', KEYS[8], ARGV[2])
  end
  return -1
end
local template = redis.call('HGET', KEYS[7], ARGV[2])
ready_check(KEYS[4], KEYS[9]) -- type checks before the first write
redis.call('ZCARD', KEYS[1])
redis.call('GET', KEYS[3])
redis.call('ZCARD', KEYS[8])

local us = now_us()
local stamp = be64(math.floor(us / 1000))
local head = head_due(KEYS[1], KEYS[5])
local min_due = head
local offered = 0
if template and is_envelope(template) then
  local rest = string.sub(template, ENV_HEADER + 2) -- after the empty ID
  for i = 6, #ARGV, 2 do
    local id, due_us = ARGV[i], tonumber(ARGV[i + 1])
    if redis.call('HEXISTS', KEYS[2], id) == 0 then
      local env = string.sub(template, 1, 1) .. stamp .. be64(math.floor(due_us / 1000)) ..
        string.sub(template, 18, ENV_HEADER) .. uvarint(#id) .. id .. rest
      if due_us <= us and min_due > due_us then
        ready_push(KEYS[4], KEYS[9], KEYS[3], {env}, false)
      else
        local seq = seq_bytes(redis.call('INCR', KEYS[3]))
        redis.call('ZADD', KEYS[1], ARGV[i + 1], seq .. id)
        redis.call('HSET', KEYS[2], id, seq .. env)
        if due_us < min_due then
          min_due = due_us
        end
      end
      offered = offered + 1
    end
  end
end
redis.call('HSET', KEYS[6], ARGV[2], ARGV[4])
redis.call('ZADD', KEYS[8], ARGV[5], ARGV[2])
if min_due < head then
  redis.call('PUBLISH', ARGV[1], us_str(min_due))
end
return offered
