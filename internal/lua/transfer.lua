-- transfer: move up to ARGV[1] due items, earliest first, from the delayed
-- set and the retry set to the ready list. One call is one atomic move: no
-- item is moved twice or lost, however many processes run it at once. The
-- batch bound keeps each call short; the caller repeats while batches come
-- back full. Every key is read before the first write, so a call that fails
-- (a key of the wrong type) changes nothing.
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- KEYS[3] -> redelay:{q}:ready     LIST
-- KEYS[4] -> redelay:{q}:retry     ZSET  member len..nonce..envelope, score due µs
-- KEYS[5] -> redelay:{q}:meta      HASH  paused (reported, not obeyed: due
--                                    items move while a queue is paused)
-- KEYS[6] -> redelay:{q}:schedules:due ZSET (read: when a recurring
--                                    schedule's next tick must be materialized)
-- KEYS[7] -> redelay:{q}:prio      ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[8] -> redelay:{q}:seq       STRING counter
-- (derived) redelay:{q}:gwait ZSET groups waiting for their rate limit
--            (groups in prelude.lua): those whose wait is over get their
--            turn back, and the next wait's end counts as a due time
-- ARGV[1] -> batch limit (at most a few thousand: results are unpacked)
--
-- Output: {moved, next due µs or -1 when nothing is pending, server now ms,
--          server now µs, 1 when the queue is paused else 0, when the
--          earliest schedule needs its next tick materialized (ms) or -1}

local us = now_us()
local now = math.floor(us / 1000)
local limit = tonumber(ARGV[1])
local now_str = us_str(us)

local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_str, 'WITHSCORES', 'LIMIT', 0, limit)
local retries = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now_str, 'WITHSCORES', 'LIMIT', 0, limit)
local nd, nr = #members / 2, #retries / 2

local ids = {}
for i = 1, nd do
  ids[i] = string.sub(members[2 * i - 1], SEQ_LEN + 1)
end
local vals = {}
if nd > 0 then
  vals = redis.call('HMGET', KEYS[2], unpack(ids))
end
-- Type checks before the first write; the priority set's count also
-- tells whether the marker must be in place (below).
local queued = redis.call('ZCARD', KEYS[7])
if nd + nr > 0 then
  redis.call('LLEN', KEYS[3])
end

-- Merge the two sets in due order (a delayed item first on a tie), up to
-- the limit.
local envs = {}
local i, j = 1, 1
while #envs < limit and (i <= nd or j <= nr) do
  local take_delayed
  if i > nd then
    take_delayed = false
  elseif j > nr then
    take_delayed = true
  else
    take_delayed = tonumber(members[2 * i]) <= tonumber(retries[2 * j])
  end
  if take_delayed then
    local v = vals[i]
    if v then
      envs[#envs + 1] = string.sub(v, SEQ_LEN + 1)
    end
    i = i + 1
  else
    envs[#envs + 1] = retry_envelope(retries[2 * j - 1])
    j = j + 1
  end
end
local moved_delayed, moved_retries = i - 1, j - 1

if #envs > 0 then
  ready_push(KEYS[3], KEYS[7], KEYS[8], envs, false)
end
if moved_delayed > 0 then
  local done = {}
  for k = 1, moved_delayed do
    done[k] = ids[k]
  end
  redis.call('HDEL', KEYS[2], unpack(done))
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, moved_delayed - 1)
end
if moved_retries > 0 then
  redis.call('ZREMRANGEBYRANK', KEYS[4], 0, moved_retries - 1)
end

-- A consumer that took the priority marker and died leaves the ready
-- list without it (until the reclaimer gives it back): put it back, so
-- that waiting consumers wake for the priority set within a sweep.
if queued > 0 then
  prio().mark(KEYS[3])
end

-- Groups whose rate limit lets them deliver again get their turn back.
local wait_due = math.huge
if redis.call('EXISTS', string.sub(KEYS[3], 1, -6) .. 'gwait') == 1 then
  local G = gtake()
  wait_due = G.lift(G.keys(KEYS[3]), us, limit)
end

local next_due = math.min(head_due(KEYS[1], KEYS[4]), wait_due)
if next_due == math.huge then
  next_due = -1
end
local sched = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
local sched_due = -1
if sched[2] then
  -- A score no script wrote (negative, -inf) means due now, not "none";
  -- the reply is an integer.
  sched_due = math.min(math.max(tonumber(sched[2]) or 0, 0), 1e15)
end
return {moved_delayed + moved_retries, next_due, now, us, redis.call('HEXISTS', KEYS[5], 'paused'), sched_due}
