-- receive: lease up to ARGV[2] ready items to the caller until now + ARGV[1]
-- ms: from the priority set first (highest priority, then oldest), then the
-- oldest of the ready list (take_ready in prelude.lua). When ARGV[4] is not
-- empty, it is an item the caller's blocking wait moved to the claimed list
-- (BLMOVE ready -> claimed): it is leased first, if it is still there (the
-- reclaimer gives items left in the claimed list back to the ready list
-- after a while). A claimed PRIO_MARKER is dropped, never leased: it woke
-- the caller for the priority set; a claimed turn of a group (TURN ..
-- group) is replaced by the group's next item, if the group may deliver.
-- An item taken from a group is leased against the group's limits
-- (G.take): its token is recorded in <base>:gtok until it is settled.
--
-- Leases are named by tokens the caller chose before sending: ARGV[3] plus
-- the lease's index (0, 1, ...). So a second run of the same call (the
-- client resent it after a lost reply) finds its first lease and returns
-- the leases the first run made, instead of leasing more items.
--
-- Envelopes are leased as they are: their attempt counter counts the
-- deliveries that failed, so this delivery's number is one more (the
-- reclaimer and settle.lua update the counter; receiving, the hot path,
-- never rewrites a value). Bytes that are no envelope at all (see
-- is_envelope) go to the dead letters as they are; envelopes of versions
-- this library does not know are leased like any other (the consumer
-- decides what to do with them).
--
-- Every key is read before the first write, so a call that fails changes
-- nothing.
--
-- KEYS[1] -> redelay:{q}:ready      LIST
-- KEYS[2] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[3] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[4] -> redelay:{q}:claimed    LIST  items popped by waiting consumers
-- KEYS[5] -> redelay:{q}:dead:ready LIST  bytes that are no envelope go here
-- KEYS[6] -> redelay:{q}:meta       HASH  paused: lease nothing
-- KEYS[7] -> redelay:{q}:prio       ZSET  ready items of priority 1..9
-- KEYS[8] -> redelay:{q}:rate       STRING when the next delivery may start, Unix µs
-- ARGV[1] -> visibility timeout in ms
-- ARGV[2] -> how many items at most
-- ARGV[3] -> token prefix, unique to this call
-- ARGV[4] -> the claimed item to lease first, or ''
-- ARGV[5] -> the fleet's rate limit (blocking.WithRateLimit) as the
--            interval between two delivery starts, µs; 0: none
-- ARGV[6] -> with ARGV[5]: how far ahead of now starts may be handed out, µs
-- ARGV[7] -> the fleet's concurrency (blocking.WithGlobalConcurrency): the
--            most leases at once; 0: none
-- ARGV[8] -> '0' for a dead-letter queue, whose items have no deadline
--            (an item's ends when it is dead-lettered): none expires, not
--            even one a release that kept deadlines dead-lettered;
--            otherwise '1'
-- ARGV[9] -> '1': the caller sets the queue's group limits (ARGV[10],
--            ARGV[11]), recorded in the meta hash for every process; '0':
--            the recorded ones apply
-- ARGV[10] -> the most leases per group at once
--            (blocking.WithGroupConcurrency), 0: none
-- ARGV[11] -> the time between two delivery starts of one group, µs
--            (blocking.WithGroupRateLimit), 0: none
--
-- The limits. A delivery start is a slot on one timeline every process
-- shares (KEYS[8], GCRA-style): the call leases at most as many items as
-- there are slots from the next free one to now + ARGV[6], and returns
-- when the first may start; the caller starts them one interval apart.
-- With no slot that near, or every lease taken, nothing is leased (a
-- claimed item goes back first in line) and the call says how long to
-- wait.
--
-- Output: false when nothing was leased or dead-lettered; {'paused'} when
--   the queue is paused (a claimed item went back to the head of the ready
--   list); {'limited', 'r', µs} when the rate limit has no slot within
--   ARGV[6] (wait that long), {'limited', 'c', ''} when ARGV[7] leases are
--   held (wait for one to end); otherwise a flat list of pairs, in delivery order: {token,
--   envelope} for a lease, {'', reason} for bytes moved to the dead letters,
--   {'!', id} for an item past its deadline (blocking.WithTTL), moved to the
--   dead letters with the error 'expired', and without its deadline,
--   instead of being leased; with a
--   rate limit, the list ends with {'@', µs}: how long after now the first
--   lease may start (the others follow one interval apart).

local prefix, max = ARGV[3], tonumber(ARGV[2])
local tok = function(i) return prefix .. string.format('%x', i) end

-- A resent call: return what the first run leased.
if redis.call('HEXISTS', KEYS[3], tok(0)) == 1 then
  local out = {}
  for i = 0, max - 1 do
    local env = redis.call('HGET', KEYS[3], tok(i))
    if not env then
      break
    end
    out[#out + 1] = tok(i)
    out[#out + 1] = env
  end
  return out
end

-- give_back returns the claimed item, if any, to the head of the line.
local function give_back()
  if ARGV[4] ~= '' then
    ready_check(KEYS[1], KEYS[7])
    if redis.call('LREM', KEYS[4], 1, ARGV[4]) == 1 then
      list_push(KEYS[1], KEYS[7], nil, {ARGV[4]}, true) -- it was in the ready list: never of priority, nor of a group's set
    end
  end
end

-- The group limits this caller sets, for every process.
if ARGV[9] == '1' then
  local cur = redis.call('HMGET', KEYS[6], 'group_limit', 'group_interval_us')
  for i, f in ipairs({'group_limit', 'group_interval_us'}) do
    local want = ARGV[9 + i]
    if want == '0' and cur[i] then
      redis.call('HDEL', KEYS[6], f)
    elseif want ~= '0' and cur[i] ~= want then
      redis.call('HSET', KEYS[6], f, want)
    end
  end
end

-- Paused (pause.lua): hand nothing out; a claimed item goes back first in
-- line.
if redis.call('HEXISTS', KEYS[6], 'paused') == 1 then
  give_back()
  return {'paused'}
end

local interval, limit = tonumber(ARGV[5]), tonumber(ARGV[7])
if limit > 0 then
  local room = limit - redis.call('ZCARD', KEYS[2])
  if room <= 0 then
    give_back()
    return {'limited', 'c', ''}
  end
  max = math.min(max, room)
end
local us, next_start
if interval > 0 then
  us = now_us()
  next_start = math.max(us, tonumber(redis.call('GET', KEYS[8]) or '0'))
  local ahead = tonumber(ARGV[6])
  if next_start - us > ahead then
    give_back()
    return {'limited', 'r', us_str(next_start - ahead - us)}
  end
  max = math.min(max, math.floor((us + ahead - next_start) / interval) + 1)
end
-- Type checks: every key written below is read first.
redis.call('ZCARD', KEYS[2])
redis.call('LLEN', KEYS[5])
local envs, groups, marked = {}, nil, false -- groups: by position, once one came from a group
if ARGV[4] ~= '' then
  redis.call('LLEN', KEYS[1])
  if ARGV[4] == PRIO_MARKER then
    redis.call('ZCARD', KEYS[7])
    redis.call('LREM', KEYS[4], 1, ARGV[4])
    marked = true
  elseif redis.call('LREM', KEYS[4], 1, ARGV[4]) == 1 then
    if is_turn(ARGV[4]) then
      local G = gtake()
      local g = string.sub(ARGV[4], 3)
      envs[1] = G.take(G.keys(KEYS[1]), g, true)
      if envs[1] then
        groups = {g}
      end
    else
      envs[1] = ARGV[4]
    end
  end
end
local more, mgroups = take_ready(KEYS[1], KEYS[7], max - #envs, marked, true)
local skip = #envs
for i = 1, #more do
  envs[#envs + 1] = more[i]
end
if mgroups then
  groups = groups or {}
  for i = 1, #more do
    groups[skip + i] = mgroups[i]
  end
end
if #envs == 0 then
  return false
end

local now = now_ms()
local deadline = now + tonumber(ARGV[1])
local deadlines = ARGV[8] ~= '0'
local out, leases, inflight, dead = {}, {}, {}, {}
local gtoks, gone -- the leases and the expired items of groups
if groups then
  gtoks, gone = {}, {}
end
local n = 0
for i = 1, #envs do
  local env = envs[i]
  if deadlines and expired(env, now) then
    dead[#dead + 1] = story().dead_letter(env, 'expired', 'expired', attempt_of(env))
    out[#out + 1] = '!'
    out[#out + 1] = envelope_id(env) or ''
    if groups and groups[i] then
      gone[#gone + 1] = groups[i]
    end
  elseif is_envelope(env) then
    local token = tok(n)
    n = n + 1
    if groups and groups[i] then
      gtoks[#gtoks + 1] = token
      gtoks[#gtoks + 1] = groups[i]
    end
    leases[#leases + 1] = deadline
    leases[#leases + 1] = token
    inflight[#inflight + 1] = token
    inflight[#inflight + 1] = env
    out[#out + 1] = token
    out[#out + 1] = env
  else
    dead[#dead + 1] = env
    out[#out + 1] = ''
    out[#out + 1] = not_envelope_reason(env)
  end
end
if #dead > 0 then
  redis.call('LPUSH', KEYS[5], unpack(dead))
  dead_bound(KEYS[6], KEYS[5])
end
if gtoks and #gtoks > 0 then
  redis.call('HSET', string.sub(KEYS[6], 1, -5) .. 'gtok', unpack(gtoks))
end
if gone and #gone > 0 then
  local G = grp()
  local K = G.keys(KEYS[1])
  for i = 1, #gone do
    G.settled(K, gone[i])
  end
end
if n > 0 then
  redis.call('ZADD', KEYS[2], unpack(leases))
  redis.call('HSET', KEYS[3], unpack(inflight))
  if interval > 0 then
    local after = next_start + n * interval
    redis.call('SET', KEYS[8], us_str(after), 'PX', math.floor((after - us) / 1000) + 1000)
    out[#out + 1] = '@'
    out[#out + 1] = us_str(next_start - us)
  end
end
return out
