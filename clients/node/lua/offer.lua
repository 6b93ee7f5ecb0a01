-- now_us returns the Redis server's clock in Unix microseconds.
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

-- us_str formats a time in microseconds for a Redis command: Lua turns a
-- number into text with 14 significant digits, and Unix µs have 16.
local function us_str(us)
  return string.format('%.0f', us)
end

-- be64 and be32 encode a non-negative integer as 8 or 4 big-endian bytes
-- with one string.char call, cheaper than filling a table and joining it.
local function be64(n)
  local f = math.floor
  return string.char(f(n / 72057594037927936) % 256, f(n / 281474976710656) % 256,
    f(n / 1099511627776) % 256, f(n / 4294967296) % 256,
    f(n / 16777216) % 256, f(n / 65536) % 256, f(n / 256) % 256, n % 256)
end

-- seq_bytes encodes the offer counter n as the SEQ_LEN-byte prefix.
local function seq_bytes(n)
  local f = math.floor
  return string.char(f(n / 1099511627776) % 256, f(n / 4294967296) % 256,
    f(n / 16777216) % 256, f(n / 65536) % 256, f(n / 256) % 256, n % 256)
end

-- read_be32 decodes 4 big-endian bytes of s starting at pos.
local function read_be32(s, pos)
  local a, b, c, d = string.byte(s, pos, pos + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- is_envelope tells bytes that can be an envelope of some version (past or
-- future) from bytes that are no envelope at all: envelope.IsEnvelope.
local function is_envelope(env)
  local v = string.byte(env, 1)
  return v ~= nil and v >= 1 and v <= 15 and #env > 21
end

-- lane_replay tells whether this call (ARGV nonce) ran before. Every call
-- that is not idempotent by itself records its outcome under its lane (one
-- producer's call slot) with lane_record; the nonces of a lane's calls grow
-- (base 36), one call at a time. It returns the recorded outcome when this
-- call ran before (the client resent it after a lost reply, or a copy held
-- in the network arrived late), false when a later call of the lane ran
-- already (this is a stale copy: it must change nothing), nil when this is
-- the call's first run.
local function lane_replay(kLane, nonce)
  local rec = redis.call('GET', kLane)
  if not rec then
    return nil
  end
  local bar = string.find(rec, '|', 1, true)
  local last = tonumber(string.sub(rec, 1, bar - 1), 36)
  local this = tonumber(nonce, 36)
  if this == last then
    return string.sub(rec, bar + 1)
  end
  if this < last then
    return false
  end
  return nil
end

-- lane_record stores a call's outcome under its lane for ttl ms.
local function lane_record(kLane, nonce, outcome, ttl)
  redis.call('SET', kLane, nonce .. '|' .. outcome, 'PX', ttl)
end

-- read_uvarint decodes an unsigned varint of s at pos: the value and the
-- position after it, or nil when s ends first.
local function read_uvarint(s, pos)
  local v, mul = 0, 1
  for i = 0, 9 do
    local b = string.byte(s, pos + i)
    if not b then
      return nil
    end
    v = v + (b % 128) * mul
    if b < 128 then
      return v, pos + i + 1
    end
    mul = mul * 128
  end
  return nil
end

-- uvarint encodes n as an unsigned varint.
local function uvarint(n)
  local out = {}
  repeat
    local b = n % 128
    n = math.floor(n / 128)
    if n > 0 then
      b = b + 128
    end
    out[#out + 1] = string.char(b)
  until n == 0
  return table.concat(out)
end

local extra_fns
-- extra returns the helpers of features a queue may not use (extension
-- fields, deadlines, bounds), built on first use like prio(): a script
-- that never needs them does not pay for creating them.
local function extra()
  if extra_fns then
    return extra_fns
  end
  local X = {}

  -- X.ext_value finds the extension field tag of a version 2 envelope
  -- (docs/format.md): the position and length of its value, or nil
  -- (another version, no such field, or bytes that do not parse). Then,
  -- for X.without_ext: where the field starts, where the count of fields
  -- starts, the count, and where the first field starts.
  function X.ext_value(env, tag)
    if string.byte(env, 1) ~= 2 or #env <= 21 then
      return nil
    end
    local len, pos = read_uvarint(env, 21 + 1)
    if not len then
      return nil
    end
    pos = pos + len
    local count
    count, pos = read_uvarint(env, pos)
    if not count then
      return nil
    end
    for _ = 1, count * 2 do
      len, pos = read_uvarint(env, pos)
      if not len then
        return nil
      end
      pos = pos + len
    end
    local at = pos
    count, pos = read_uvarint(env, pos)
    if not count then
      return nil
    end
    local first = pos
    for _ = 1, count do
      local start = pos
      local t
      t, pos = read_uvarint(env, pos)
      if not t then
        return nil
      end
      len, pos = read_uvarint(env, pos)
      if not len or pos + len - 1 > #env then
        return nil
      end
      if t == tag then
        return pos, len, start, at, count, first
      end
      pos = pos + len
    end
    return nil
  end

  -- X.without_ext returns env without its extension field tag: env itself
  -- when it has none. An envelope left with no field is version 1, the
  -- version a writer would have used (docs/format.md).
  function X.without_ext(env, tag)
    local pos, len, start, at, count, first = X.ext_value(env, tag)
    if not pos then
      return env
    end
    local rest = string.sub(env, pos + len)
    if count == 1 then
      return '\1' .. string.sub(env, 2, at - 1) .. rest
    end
    return string.sub(env, 1, at - 1) .. uvarint(count - 1) .. string.sub(env, first, start - 1) .. rest
  end

  -- An item's deadline (blocking.WithTTL) is extension tag 2, 8 bytes:
  -- the producer writes the TTL in ms, and the offer stamps in its place
  -- the deadline, due time + TTL, Unix ms (X.stamp_deadline). Receiving an
  -- item past its deadline dead-letters it (expired).
  local TTL_TAG = 2

  -- deadline_at returns where env's 8-byte deadline (or TTL) starts, and
  -- its value; nil when it has none.
  local function deadline_at(env)
    local pos, len = X.ext_value(env, TTL_TAG)
    if not pos or len ~= 8 then
      return nil
    end
    return pos, read_be32(env, pos) * 4294967296 + read_be32(env, pos + 4)
  end

  -- X.stamp_deadline turns the TTL of env, due at due_ms, into its
  -- deadline.
  function X.stamp_deadline(env, due_ms)
    local pos, ttl = deadline_at(env)
    if not pos then
      return env
    end
    return string.sub(env, 1, pos - 1) .. be64(due_ms + ttl) .. string.sub(env, pos + 8)
  end

  -- X.expired tells whether env's deadline has passed at now (Unix ms).
  function X.expired(env, now)
    local pos, deadline = deadline_at(env)
    return pos ~= nil and deadline < now
  end

  -- X.without_deadline returns env without its deadline: a dead letter
  -- has none (the deadline of an item ends when it is dead-lettered, and
  -- a redriven item starts anew).
  function X.without_deadline(env)
    return X.without_ext(env, TTL_TAG)
  end

  -- X.ready_len returns how many items are ready: the ready list's, less
  -- the marker at its tail, and the priority set's. The ready list holds
  -- at most one marker, at its tail (ready_push keeps it there), and a
  -- marker can stay there after the priority set emptied (the last item
  -- of priority deleted by the inspector): the tail tells. Every count of
  -- ready items (Stats, Size, Purge, the bound) is this one. upto spares
  -- a bound the read of the tail: with it, a count above upto may include
  -- the marker.
  function X.ready_len(kReady, kPrio, upto)
    local n = redis.call('LLEN', kReady) + redis.call('ZCARD', kPrio)
    if n > 0 and (upto == nil or n > upto) and redis.call('LINDEX', kReady, -1) == '\0' then
      n = n - 1
    end
    -- Groups: their ready items count, their turns in the list do not.
    local base = string.sub(kReady, 1, -6)
    local g = redis.call('HGET', base .. 'meta', 'gready')
    if g then
      n = math.max(0, n + tonumber(g) - redis.call('SCARD', base .. 'gturn'))
    end
    return n
  end

  -- X.queue_length is what a queue's bound (blocking.WithMaxSize)
  -- counts: the items pending (delayed and retry) and ready (ready_len).
  -- The count is exact when it is above upto, the most the caller can
  -- accept in full (the bound less the items it brings): below, one too
  -- many changes nothing, and the list's tail is not read.
  function X.queue_length(kDelayed, kRetry, kReady, kPrio, upto)
    local pending = redis.call('ZCARD', kDelayed) + redis.call('ZCARD', kRetry)
    return pending + X.ready_len(kReady, kPrio, upto - pending)
  end

  -- X.group returns env's group key (blocking.WithGroup: extension tag
  -- 3), nil when it has none.
  local GROUP_TAG = 3
  function X.group(env)
    local pos, len = X.ext_value(env, GROUP_TAG)
    if not pos then
      return nil
    end
    return string.sub(env, pos, pos + len - 1)
  end

  extra_fns = X
  return X
end

-- stamp_deadline is extra().stamp_deadline for an envelope that may have a
-- deadline (version 2), env itself otherwise: the check costs a byte.
local function stamp_deadline(env, due_ms)
  if string.byte(env, 1) ~= 2 then
    return env
  end
  return extra().stamp_deadline(env, due_ms)
end

local prio_fns
-- prio returns the priority helpers, built once per script run.
local function prio()
  if prio_fns then
    return prio_fns
  end
  local P = {}

  -- P.of reads the priority of an envelope: 0 unless it is a version 2
  -- envelope with a priority extension (newer versions: 0).
  function P.of(env)
    local pos, len = extra().ext_value(env, 1)
    if not pos then
      return 0
    end
    local p = string.byte(env, pos)
    if len ~= 1 or not p or p > 9 then
      return 0
    end
    return p
  end

  -- P.any tells whether one of envs has a priority above 0.
  function P.any(envs)
    for i = 1, #envs do
      if P.of(envs[i]) > 0 then
        return true
      end
    end
    return false
  end

  -- P.mark puts PRIO_MARKER at the tail of the ready list unless it is
  -- there already.
  function P.mark(kReady)
    if redis.call('LINDEX', kReady, -1) ~= '\0' then
      redis.call('RPUSH', kReady, '\0')
    end
  end

  -- P.edge returns the score for one more item at the head (or, head
  -- false, the tail) of priority band base, without the counter: one
  -- beyond the band's first (last) score, or its middle when the band is
  -- empty. edges keeps the scores given so far in this call, by band.
  function P.edge(kPrio, base, head, edges)
    local e = edges[base]
    if not e then
      local lo, hi = string.format('%.0f', base), '(' .. string.format('%.0f', base + 281474976710656)
      local r
      if head then
        r = redis.call('ZRANGEBYSCORE', kPrio, lo, hi, 'WITHSCORES', 'LIMIT', 0, 1)
      else
        r = redis.call('ZREVRANGEBYSCORE', kPrio, hi, lo, 'WITHSCORES', 'LIMIT', 0, 1)
      end
      e = tonumber(r[2]) or base + 140737488355328
    end
    if head then
      e = e - 1
    else
      e = e + 1
    end
    edges[base] = e
    return e
  end

  -- P.push puts the items of envs that have a priority (at least one
  -- has) in the priority set, with the marker at the ready list's tail,
  -- and returns the others, for ready_push to put in the list. kSeq nil:
  -- the counter is unusable (see seq_usable), and each item is placed by
  -- the scores already in its band instead (P.edge): the same place in
  -- line, with no counter read or written.
  function P.push(kReady, kPrio, kSeq, envs, head)
    local plain, pri = {}, {}
    for i = 1, #envs do
      local p = P.of(envs[i])
      if p > 0 then
        pri[#pri + 1] = p
        pri[#pri + 1] = envs[i]
      else
        plain[#plain + 1] = envs[i]
      end
    end
    local n = #pri / 2
    local seq
    if kSeq then
      seq = redis.call('INCRBY', kSeq, n) - n
    end
    local args, edges = {}, {}
    for i = 1, n do
      local base = (9 - pri[2 * i - 1]) * 281474976710656
      local s, score
      if seq then
        s = seq + i
        score = base + 140737488355328
        if head then
          score = score - s
        else
          score = score + s
        end
      else
        score = P.edge(kPrio, base, head, edges)
        s = math.abs(score - base - 140737488355328)
      end
      args[2 * i - 1] = string.format('%.0f', score)
      args[2 * i] = seq_bytes(s) .. pri[2 * i]
    end
    redis.call('ZADD', kPrio, unpack(args))
    P.mark(kReady)
    return plain
  end

  -- P.pop takes up to n items from the priority set, highest priority
  -- first, and keeps the marker in place while items remain; a pop that
  -- empties the set drops the marker. card: the set's size before the
  -- pop, when the caller knows it.
  function P.pop(kReady, kPrio, n, card)
    local out = {}
    if n <= 0 then
      return out
    end
    local popped = redis.call('ZPOPMIN', kPrio, n)
    for i = 1, #popped, 2 do
      out[#out + 1] = string.sub(popped[i], 6 + 1)
    end
    if #out > 0 then
      local marked = redis.call('LINDEX', kReady, -1) == '\0'
      local left
      if card then
        left = card - #out
      else
        left = redis.call('ZCARD', kPrio)
      end
      if left > 0 and not marked then
        redis.call('RPUSH', kReady, '\0')
      elseif left <= 0 and marked then
        redis.call('RPOP', kReady)
      end
    end
    return out
  end

  -- P.take goes on past the marker (see below): out holds what was taken
  -- before it; the priority set's items come next, then the ready list's
  -- (dropping the markers met).
  function P.take(kReady, kPrio, n, out, card)
    local pr = P.pop(kReady, kPrio, n - #out, card)
    for i = 1, #pr do
      out[#out + 1] = pr[i]
    end
    while #out < n do
      local want = n - #out
      local popped = redis.call('RPOP', kReady, want)
      if not popped then
        break
      end
      local markers = 0
      for i = 1, #popped do
        if popped[i] == '\0' then
          markers = markers + 1
        else
          out[#out + 1] = popped[i]
        end
      end
      if markers == 0 or #popped < want then
        break
      end
    end
    return out
  end

  prio_fns = P
  return P
end

local grp_fns
-- grp returns the helpers every script that meets a group needs (its keys,
-- its limits, a turn, the end of a lease),
-- built once per script run, and only by a run that meets a group. They
-- name nothing of this prelude but TURN, so that the scripts that only
-- settle leases (ack.lua) are composed with little more than they had
-- before groups: each definition composed into a script is a closure built
-- on every call. gtake() adds the take, gpush() the push.
local function grp()
  if grp_fns then
    return grp_fns
  end
  local G = {}

  -- G.keys returns the group keys of the queue whose ready list is kReady.
  function G.keys(kReady)
    local base = string.sub(kReady, 1, -7)
    return {base = base, ready = kReady, meta = base .. ':meta', turn = base .. ':gturn',
      size = base .. ':gsize', flight = base .. ':gflight', tok = base .. ':gtok',
      paused = base .. ':gpaused', wait = base .. ':gwait'}
  end

  -- G.items returns the key of group g's ready items.
  function G.items(K, g)
    return K.base .. ':g:' .. g
  end

  -- G.limits reads the queue's group limits once per run: the most leases
  -- per group (0: none) and the interval between a group's delivery
  -- starts, µs (0: none).
  function G.limits(K)
    if not K.limit then
      local v = redis.call('HMGET', K.meta, 'group_limit', 'group_interval_us')
      K.limit, K.interval = tonumber(v[1] or '0') or 0, tonumber(v[2] or '0') or 0
    end
    return K.limit, K.interval
  end

  -- G.turn gives group g a turn at the back of the line unless it has one,
  -- or may not deliver now (paused, waiting for its rate limit, at its
  -- concurrency limit); whatever lets it deliver again calls this.
  function G.turn(K, g)
    if redis.call('SISMEMBER', K.turn, g) == 1 or redis.call('SISMEMBER', K.paused, g) == 1
        or redis.call('ZSCORE', K.wait, g) then
      return
    end
    local limit = G.limits(K)
    if limit > 0 and tonumber(redis.call('HGET', K.flight, g) or '0') >= limit then
      return
    end
    redis.call('SADD', K.turn, g)
    redis.call('LPUSH', K.ready, '\0\1' .. g)
  end

  -- G.shrink counts n items out of group g (delivered for good, settled,
  -- purged).
  function G.shrink(K, g, n)
    if tonumber(redis.call('ZINCRBY', K.size, -n, g)) <= 0 then
      redis.call('ZREM', K.size, g)
    end
  end

  -- G.settled ends a lease of group g: one less in flight and in the
  -- group (an item that goes back to the group was pushed again), and a
  -- turn if that lets the group deliver.
  function G.settled(K, g)
    if redis.call('HINCRBY', K.flight, g, -1) <= 0 then
      redis.call('HDEL', K.flight, g)
    end
    G.shrink(K, g, 1)
    if redis.call('EXISTS', G.items(K, g)) == 1 then
      G.turn(K, g)
    end
  end

  -- G.untoken ends the leases of tokens held by groups (each settled:
  -- G.settled); tokens of ungrouped leases are skipped.
  function G.untoken(K, tokens)
    if #tokens == 0 then
      return
    end
    local gs = redis.call('HMGET', K.tok, unpack(tokens))
    local held = {}
    for i = 1, #tokens do
      if gs[i] then
        held[#held + 1] = tokens[i]
      end
    end
    if #held == 0 then
      return
    end
    redis.call('HDEL', K.tok, unpack(held))
    for i = 1, #tokens do
      if gs[i] then
        G.settled(K, gs[i])
      end
    end
  end

  grp_fns = G
  return G
end

-- gpush returns grp() with G.push, added on first use.
local function gpush()
  local G = grp()
  if G.push then
    return G
  end

  -- G.push puts the grouped items of envs (those with a group, and, when
  -- grouped, those without: group '') in their groups, at the back (or,
  -- head, the front, the last of envs first), and returns the others.
  function G.push(K, envs, head, grouped)
    local rest, byg, order = {}, {}, {}
    for i = 1, #envs do
      local e, g = envs[i], nil
      if is_envelope(e) then
        g = string.byte(e, 1) == 2 and extra().group(e) or nil
        if g == nil and grouped then
          g = ''
        end
      end
      if g then
        if not byg[g] then
          byg[g] = {}
          order[#order + 1] = g
        end
        local t = byg[g]
        t[#t + 1] = e
      else
        rest[#rest + 1] = e
      end
    end
    if #order == 0 then
      return rest
    end
    if not grouped then
      redis.call('HSET', K.meta, 'groups', '1')
    end
    local total = 0
    for _, g in ipairs(order) do
      local key, t, args, edges = G.items(K, g), byg[g], {}, {}
      for i = 1, #t do
        local base = (9 - prio().of(t[i])) * 281474976710656
        local score = prio().edge(key, base, head, edges)
        args[2 * i - 1] = string.format('%.0f', score)
        args[2 * i] = seq_bytes(math.abs(score - base - 140737488355328)) .. t[i]
      end
      redis.call('ZADD', key, unpack(args))
      redis.call('ZINCRBY', K.size, #t, g)
      total = total + #t
      G.turn(K, g)
    end
    redis.call('HINCRBY', K.meta, 'gready', total)
    return rest
  end

  return G
end

-- list_push makes envs ready as they are, without their groups: those of
-- priority 0 go to the ready list, the others to the priority set (kPrio;
-- kSeq numbers them, or, nil, their band's scores place them: see P.push).
-- head: they go first in line (an item given back), the last of envs
-- first; otherwise last in line. The caller has read kReady's type, and
-- kPrio's (with a read) when envs has priorities or head is true. Callers
-- use ready_push, but for entries that were popped off the ready list and
-- go back to it (a claimed entry given back: a turn, the marker, or an item
-- that was in the list), which never belong in a group's set.
--
-- First in line is the ready list's tail, where the marker is: the marker
-- is taken off before the push and put back after it while the priority
-- set holds items (a stale one, left after the set emptied, is dropped).
-- A marker among envs (a claimed marker given back) is not pushed: it
-- stands for one at the tail. So the list never holds a marker but at its
-- tail, nor two (X.ready_len counts on it). For a queue without priorities
-- a give-back is two commands (LINDEX, RPUSH).
local function list_push(kReady, kPrio, kSeq, envs, head)
  for i = 1, #envs do
    if string.byte(envs[i], 1) == 2 then
      if prio().any(envs) then
        envs = prio().push(kReady, kPrio, kSeq, envs, head)
      end
      break
    end
  end
  if #envs == 0 then
    return
  end
  if not head then
    redis.call('LPUSH', kReady, unpack(envs))
    return
  end
  local marked = redis.call('LINDEX', kReady, -1) == '\0'
  if marked then
    redis.call('RPOP', kReady)
  end
  for i = 1, #envs do
    if envs[i] == '\0' then
      local items = {}
      for j = 1, #envs do
        if envs[j] ~= '\0' then
          items[#items + 1] = envs[j]
        end
      end
      marked, envs = true, items
      break
    end
  end
  if #envs > 0 then
    redis.call('RPUSH', kReady, unpack(envs))
  end
  if marked and redis.call('ZCARD', kPrio) > 0 then
    redis.call('RPUSH', kReady, '\0')
  end
end

-- ready_push makes envs ready (list_push), but for the items of groups,
-- which go to their groups (G.push), as does every item once the queue has
-- had a grouped one (group ''). grouped: whether it has (its meta hash's
-- 'groups'), when the caller read it already; nil: one HEXISTS reads it.
local function ready_push(kReady, kPrio, kSeq, envs, head, grouped)
  if #envs == 0 then
    return
  end
  if grouped == nil then
    grouped = redis.call('HEXISTS', string.sub(kReady, 1, -6) .. 'meta', 'groups') == 1
  end
  local any = grouped
  for i = 1, #envs do
    if any then
      break
    end
    any = string.byte(envs[i], 1) == 2 and extra().group(envs[i]) ~= nil
  end
  if any then
    local G = gpush()
    envs = G.push(G.keys(kReady), envs, head, grouped)
  end
  list_push(kReady, kPrio, kSeq, envs, head)
end

-- ready_check reads the types of the ready list and of the priority set
-- before a script's first write; with envs (what the script will push, last
-- in line), the priority set's only when one of them has a priority.
local function ready_check(kReady, kPrio, envs)
  redis.call('LLEN', kReady)
  if envs == nil then
    redis.call('ZCARD', kPrio)
    return
  end
  for i = 1, #envs do
    if string.byte(envs[i], 1) == 2 then
      -- Once: prio().any reads every envelope (a loop around it would
      -- cost a batch of version 2 envelopes quadratic time).
      if prio().any(envs) then
        redis.call('ZCARD', kPrio)
      end
      return
    end
  end
end

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
      seq_high = sub(seq_bytes(seq), 1, 6 - 1)
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
