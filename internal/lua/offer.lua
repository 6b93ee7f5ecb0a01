-- offer: add one or more items to the delayed set, or to the ready list:
-- at once for an immediate offer (blocking.Queue.Offer), or when a delayed
-- item is already due and nothing pending (delayed or retry) is due before
-- it. The items are taken in order and the outcome is the same as offering
-- them one by one, but the fixed costs are paid once per call: one TIME,
-- one duplicate lookup (HMGET; none when every ID was generated), one head
-- read of the delayed set (none when every item is ready now) and one of
-- the retry set only when an item may go ahead of it (due now, or earlier
-- than the delayed set's head), one counter bump, one ZADD, one HSET, at
-- most one LPUSH and one PUBLISH. A plain delayed offer of a generated ID
-- behind the earliest pending item is thus TIME, GET and SET of its lane,
-- ZRANGE, INCRBY, ZADD and HSET. Callers send one item,
-- the offers that concurrent callers queued meanwhile, or a chunk of
-- OfferBatch; they bound the count (a few hundred).
--
-- A call is idempotent: its outcome is recorded under the caller's lane
-- with the call's nonce, and a second run of the same call (the client
-- resent it after a lost reply, or a copy held in the network arrived late)
-- changes nothing and returns the recorded outcome. A copy that arrives
-- after a later call of the lane ran changes nothing either and returns
-- an error (its caller gave up on it long ago).
--
-- Every key is read (which checks its type) before the first write, so a
-- call that fails changes nothing.
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- KEYS[3] -> redelay:{q}:seq       STRING offer counter
-- KEYS[4] -> redelay:{q}:ready     LIST
-- KEYS[5] -> redelay:{q}:retry     ZSET  pending retries, score due µs
-- KEYS[6] -> redelay:{q}:lane:<L>  STRING this caller's last call and its outcome
-- KEYS[7] -> redelay:{q}:prio      ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[8] -> redelay:{q}:batch:<T> STRING a bounded batch's pass (see below), or
--            any key of the queue when ARGV[5] is 0
-- ARGV[1] -> wake-up channel, published to when an item offered here becomes
--            the earliest pending one
-- ARGV[2] -> call nonce, base 36, growing from call to call of the lane
-- ARGV[3] -> how long the lane record lives, ms
-- ARGV[4] -> the queue's bound (blocking.WithMaxSize): the most items
--            pending (delayed and retry) plus ready; 0: none
-- ARGV[5] -> 0: each item stands alone against the bound (refused ones get
--            status 3, the others are offered); otherwise the item count of
--            a whole batch sent as chunks in one MULTI (delayed.OfferBatch),
--            all or nothing: the first chunk checks that the whole batch
--            fits and leaves a pass in KEYS[8]; later chunks run only with
--            the pass, which the last one deletes
-- ARGV[6] -> with ARGV[5]: how many items of the batch come before this call's
-- ARGV[7+4k .. 10+4k], one group per item, in offer order:
--   id
--   envelope (version byte, 16 bytes of times to fill in, rest)
--   "d" (delay), "a" (at) or "r" (ready now, no duplicate check); "D" and
--   "A" are "d" and "a" for an ID the client generated (random, 96 bits),
--   which no pending item can hold: no duplicate check
--   delay in µs (d), due time in Unix µs (a), ignored (r)
--
-- Output: one status per item: 1 pending in the delayed set; 2 made ready
--   (the ready list, or the priority set); 0 an item with this id was already pending (that item
--   was left as it was, this one dropped); 3 refused: the queue is full
--   (ARGV[4]).
-- Due times use the server clock (TIME), so producers' clocks do not matter.

local replay = lane_replay(KEYS[6], ARGV[2])
if replay == false then
  return redis.error_reply('STALE offer call ' .. ARGV[2] .. ': a later call of its lane ran already')
end
if replay then
  local out = {}
  for i = 1, #replay do
    out[i] = tonumber(string.sub(replay, i, i))
  end
  return out
end

local us = now_us()
local now = math.floor(us / 1000)
local n = (#ARGV - 6) / 4
if n < 1 then
  return {}
end

local ids, modes, lookup = {}, {}, {}
for i = 1, n do
  ids[i] = ARGV[4 * i + 3]
  local mode = ARGV[4 * i + 5]
  if mode == 'd' or mode == 'a' then
    lookup[#lookup + 1] = ids[i]
  elseif mode == 'D' then
    mode = 'd'
  elseif mode == 'A' then
    mode = 'a'
  end
  modes[i] = mode
end
local existing = {}
if #lookup > 0 then
  local found = redis.call('HMGET', KEYS[2], unpack(lookup))
  for i = 1, #lookup do
    if found[i] then
      existing[lookup[i]] = true
    end
  end
end
-- The head of the pending sets matters only to items that may wait in them:
-- a call of items all ready now (blocking.Queue.Offer) neither reads nor
-- writes the sets. The retry set's head is read only when an item may go
-- ahead of it (see full_head): most delayed offers fall due after the
-- earliest pending item.
local head, waits = math.huge, false
for i = 1, n do
  if modes[i] ~= 'r' then
    waits = true
    break
  end
end
if waits then
  local d = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if d[2] ~= nil then
    head = tonumber(d[2])
  end
end
local min_due
local retry_read = not waits
-- full_head folds the retry set's head into head (and min_due, the
-- earliest of head and the items taken so far), once.
local function full_head()
  if retry_read then
    return
  end
  retry_read = true
  local r = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  if r[2] ~= nil then
    local due = tonumber(r[2])
    if due < head then
      head = due
    end
    if due < min_due then
      min_due = due
    end
  end
end

-- Decide each item's fate in order, as single offers would: due items go to
-- the ready list only while nothing pending (including items of this call)
-- is due at or before them.
--
-- The bound: room is how many more items fit (-1: no bound).
local room, batch, offset = -1, tonumber(ARGV[5]), tonumber(ARGV[6])
if ARGV[4] ~= '0' then
  if batch > 0 and offset > 0 then
    -- A later chunk of a bounded batch runs only if the first one did.
    room = redis.call('EXISTS', KEYS[8]) == 1 and n or 0
  else
    -- The count needs to be exact only when the items (the whole batch)
    -- might not fit.
    local bound, need = tonumber(ARGV[4]), n
    if batch > 0 then
      need = batch
    end
    room = math.max(0, bound - extra().queue_length(KEYS[1], KEYS[5], KEYS[4], KEYS[7], bound - need))
    if batch > 0 and room < batch then
      room = 0
    end
  end
end
local status, dues, scores, ready_envs = {}, {}, {}, {}
local delayed, added, ready_count = 0, {}, 0
min_due = head
for i = 1, n do
  local id = ids[i]
  local mode, t = modes[i], ARGV[4 * i + 6]
  local due_us
  if mode == 'd' then
    due_us = us + tonumber(t)
    -- A number, not text: redis.call writes it exactly (Lua's own
    -- tostring would keep 14 digits; Unix µs have 16).
    scores[i] = due_us
  elseif mode == 'a' then
    due_us = tonumber(t)
    scores[i] = t -- an integer as the client wrote it: exact
  else
    due_us = us
  end
  dues[i] = due_us
  if due_us <= us and mode ~= 'r' then
    full_head() -- whether it may go ready now depends on every pending item
  end
  if room == 0 and (mode == 'r' or not (existing[id] or added[id])) then
    status[i] = 3
  elseif mode == 'r' then
    status[i] = 2
  elseif existing[id] or added[id] then
    status[i] = 0
  elseif due_us <= us and min_due > due_us then
    status[i] = 2
  else
    status[i] = 1
    added[id] = true
    delayed = delayed + 1
    if due_us < min_due then
      min_due = due_us
    end
  end
  if status[i] == 2 then
    ready_count = ready_count + 1
    ready_envs[ready_count] = ARGV[4 * i + 4]
  end
  if room > 0 and (status[i] == 1 or status[i] == 2) then
    room = room - 1
  end
end
if batch > 0 and ARGV[4] ~= '0' then
  if offset == 0 and room ~= 0 and n < batch then
    redis.call('SET', KEYS[8], '1', 'PX', 60000) -- the pass of the later chunks
  elseif offset > 0 and offset + n >= batch then
    redis.call('DEL', KEYS[8])
  end
end
-- Whether the earliest new item is a new head needs the retry set's head
-- too; read before the first write, like every key.
if delayed > 0 and min_due < head then
  full_head()
end
if ready_count > 0 then
  ready_check(KEYS[4], KEYS[7], ready_envs) -- type checks before the first write
end

-- The stored envelope gets the server's times (its due time in ms, rounded
-- down), and its deadline when it has a TTL; items of one call often share
-- a due time, so its bytes are reused. Each string is built by one
-- concatenation: every string Lua makes is hashed and interned, which is
-- most of an item's cost here (docs/decisions.md, "Offers").
local stamp = be64(now)
local sub, char = string.sub, string.char
local last_due, last_bytes
-- stamped returns item i's envelope with its times, after the prefix p1..p2.
local function stamped(i, p1, p2)
  local due_ms = math.floor(dues[i] / 1000)
  if due_ms ~= last_due then
    last_due, last_bytes = due_ms, be64(due_ms)
  end
  local env = ARGV[4 * i + 4]
  if string.byte(env, 1) ~= 2 then -- no deadline to stamp (stamp_deadline)
    return p1 .. p2 .. sub(env, 1, 1) .. stamp .. last_bytes .. sub(env, 18)
  end
  return p1 .. p2 .. stamp_deadline(sub(env, 1, 1) .. stamp .. last_bytes .. sub(env, 18), due_ms)
end

local ready = {}
local zargs, hargs = {}, {}
local seq, seq_high = 0, nil
if delayed > 0 then
  seq = redis.call('INCRBY', KEYS[3], delayed) - delayed
end
for i = 1, n do
  local st = status[i]
  if st == 1 then
    -- The sequence prefix (seq_bytes): its first 5 bytes change once in
    -- 256 offers.
    seq = seq + 1
    local low = seq % 256
    if seq_high == nil or low == 0 then
      seq_high = sub(seq_bytes(seq), 1, SEQ_LEN - 1)
    end
    local lowb = char(low)
    local z = #zargs
    zargs[z + 1] = scores[i]
    zargs[z + 2] = seq_high .. lowb .. ids[i]
    hargs[z + 1] = ids[i]
    hargs[z + 2] = stamped(i, seq_high, lowb)
  elseif st == 2 then
    ready[#ready + 1] = stamped(i, '', '')
  end
end
if #ready > 0 then
  ready_push(KEYS[4], KEYS[7], KEYS[3], ready, false)
end
if delayed > 0 then
  redis.call('ZADD', KEYS[1], unpack(zargs))
  redis.call('HSET', KEYS[2], unpack(hargs))
end
lane_record(KEYS[6], ARGV[2], table.concat(status), ARGV[3])
-- An equal due time does not make a new head: the older item sorts first.
if delayed > 0 and min_due < head then
  redis.call('PUBLISH', ARGV[1], us_str(min_due))
end
return status
