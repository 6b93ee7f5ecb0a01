-- prelude: definitions lua.go puts before each script that names them (see
-- compose in lua.go). Defines no keys.

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

-- now_ms returns the Redis server's clock in Unix milliseconds.
local function now_ms()
  return math.floor(now_us() / 1000)
end

-- be64 and be32 encode a non-negative integer as 8 or 4 big-endian bytes
-- with one string.char call, cheaper than filling a table and joining it.
local function be64(n)
  local f = math.floor
  return string.char(f(n / 72057594037927936) % 256, f(n / 281474976710656) % 256,
    f(n / 1099511627776) % 256, f(n / 4294967296) % 256,
    f(n / 16777216) % 256, f(n / 65536) % 256, f(n / 256) % 256, n % 256)
end

-- SEQ_LEN is the width of the sequence prefix on delayed-set members and
-- items-hash values: the offer counter as 6 big-endian bytes, so members
-- with equal due times sort in offer order (2^48 offers per queue).
local SEQ_LEN = 6

-- seq_bytes encodes the offer counter n as the SEQ_LEN-byte prefix.
local function seq_bytes(n)
  local f = math.floor
  return string.char(f(n / 1099511627776) % 256, f(n / 4294967296) % 256,
    f(n / 16777216) % 256, f(n / 65536) % 256, f(n / 256) % 256, n % 256)
end

local function be32(n)
  local f = math.floor
  return string.char(f(n / 16777216) % 256, f(n / 65536) % 256, f(n / 256) % 256, n % 256)
end

-- read_be32 decodes 4 big-endian bytes of s starting at pos.
local function read_be32(s, pos)
  local a, b, c, d = string.byte(s, pos, pos + 3)
  return ((a * 256 + b) * 256 + c) * 256 + d
end

-- Envelope header (docs/format.md): version byte, enqueued ms, due ms,
-- attempt; the ID follows as a varint length + bytes. Every version keeps
-- this prefix, so the scripts handle envelopes of any version 1..15.
local ENV_MAX_VERSION = 15
local ENV_HEADER = 21
local ENV_ATTEMPT = 18 -- 1-based position of the attempt field

-- is_envelope tells bytes that can be an envelope of some version (past or
-- future) from bytes that are no envelope at all: envelope.IsEnvelope.
local function is_envelope(env)
  local v = string.byte(env, 1)
  return v ~= nil and v >= 1 and v <= ENV_MAX_VERSION and #env > ENV_HEADER
end

-- not_envelope_reason says why bytes are no envelope, for the dead letters.
local function not_envelope_reason(env)
  if #env == 0 then
    return 'not an envelope: empty'
  end
  local v = string.byte(env, 1)
  if v == 0 or v > ENV_MAX_VERSION then
    return 'not an envelope: first byte ' .. v
  end
  return 'not an envelope: ' .. #env .. ' bytes'
end

-- attempt_of reads the attempt counter of an envelope.
local function attempt_of(env)
  return read_be32(env, ENV_ATTEMPT)
end

-- with_attempt returns env with its attempt counter set to n.
local function with_attempt(env, n)
  return string.sub(env, 1, ENV_ATTEMPT - 1) .. be32(n) .. string.sub(env, ENV_ATTEMPT + 4)
end

-- with_due returns env with its due time set to due (ms).
local function with_due(env, due)
  return string.sub(env, 1, 9) .. be64(due) .. string.sub(env, 18)
end

-- retry_member is a retry-set member: a length byte, a nonce unique to this
-- retry (a lease token), then the envelope. The nonce keeps members unique.
local function retry_member(nonce, env)
  return string.char(#nonce) .. nonce .. env
end

-- retry_envelope returns the envelope of a retry-set member.
local function retry_envelope(member)
  return string.sub(member, string.byte(member, 1) + 2)
end

-- head_due returns the earliest due time (µs) in the delayed and retry sets,
-- or math.huge when both are empty.
local function head_due(kDelayed, kRetry)
  local due = math.huge
  local d = redis.call('ZRANGE', kDelayed, 0, 0, 'WITHSCORES')
  if d[2] ~= nil then
    due = tonumber(d[2])
  end
  local r = redis.call('ZRANGE', kRetry, 0, 0, 'WITHSCORES')
  if r[2] ~= nil and tonumber(r[2]) < due then
    due = tonumber(r[2])
  end
  return due
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

-- with_header returns env with header key set to value, in the part every
-- envelope version shares (fixed header, ID, headers: envelope.WithHeader),
-- keeping the rest as it is; env unchanged when it cannot be read.
local function with_header(env, key, value)
  if not is_envelope(env) then
    return env
  end
  local idlen, pos = read_uvarint(env, ENV_HEADER + 1)
  if not idlen then
    return env
  end
  pos = pos + idlen
  local count, p = read_uvarint(env, pos)
  if not count or pos > #env + 1 then
    return env
  end
  local kept, n = {}, 0
  for _ = 1, count do
    local kl, q = read_uvarint(env, p)
    if not kl then
      return env
    end
    local k = string.sub(env, q, q + kl - 1)
    local vl, r = read_uvarint(env, q + kl)
    if not vl or r + vl - 1 > #env then
      return env
    end
    if k ~= key then
      kept[#kept + 1] = string.sub(env, p, r + vl - 1)
      n = n + 1
    end
    p = r + vl
  end
  return string.sub(env, 1, pos - 1) .. uvarint(n + 1) .. table.concat(kept) ..
    uvarint(#key) .. key .. uvarint(#value) .. value .. string.sub(env, p)
end

-- HEADER_ERROR is the header holding an item's last failure
-- (envelope.HeaderError).
local HEADER_ERROR = 'redelay-error'

-- envelope_id returns the ID of an envelope, or nil when it cannot be read.
local function envelope_id(env)
  if not is_envelope(env) then
    return nil
  end
  local len, pos = read_uvarint(env, ENV_HEADER + 1)
  if not len or pos + len - 1 > #env then
    return nil
  end
  return string.sub(env, pos, pos + len - 1)
end

-- remove_pending cancels the pending delayed item id (its items-hash entry
-- names its delayed-set member) and reports whether there was one. The
-- caller has read both keys' types already.
local function remove_pending(kDelayed, kItems, id)
  local v = redis.call('HGET', kItems, id)
  if not v then
    return false
  end
  redis.call('ZREM', kDelayed, string.sub(v, 1, SEQ_LEN) .. id)
  redis.call('HDEL', kItems, id)
  return true
end

-- PRIO_MARKER is the one-byte marker the ready list's tail holds while
-- the priority set holds items (see Priorities below). It is never an
-- envelope.
local PRIO_MARKER = '\0'

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
    if string.byte(env, 1) ~= 2 or #env <= ENV_HEADER then
      return nil
    end
    local len, pos = read_uvarint(env, ENV_HEADER + 1)
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
    if n > 0 and (upto == nil or n > upto) and redis.call('LINDEX', kReady, -1) == PRIO_MARKER then
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

-- expired is extra().expired, as cheap for a version 1 envelope.
local function expired(env, now)
  return string.byte(env, 1) == 2 and extra().expired(env, now)
end

-- without_deadline is extra().without_deadline, as cheap for a version 1
-- envelope (which has none) and for bytes that are no envelope.
local function without_deadline(env)
  if string.byte(env, 1) ~= 2 then
    return env
  end
  return extra().without_deadline(env)
end

-- story returns the functions that write the story of a failing item
-- (S.with_failure, S.dead_letter), defined on first use: only the scripts
-- that settle failures name it, and they pay for it only when one fails.
local story_fns
local function story()
  if story_fns then
    return story_fns
  end
  local S = {}
  -- The story of a failing item, in its headers (envelope.HeaderErrors
  -- and the next two): the error of each of its last ERRORS_KEPT failed
  -- attempts (a JSON array of strings, newest last, each cut to
  -- ERROR_MAX bytes), and, once dead-lettered, when (Unix ms, server
  -- clock) and after how many deliveries. HEADER_ERROR keeps the last
  -- failure whole.
  local HEADER_ERRORS = 'redelay-errors'
  local HEADER_DEAD_AT = 'redelay-dead-at'
  local HEADER_ATTEMPTS = 'redelay-attempts'
  local ERRORS_KEPT = 10
  local ERROR_MAX = 1024

  -- header_value returns the value of header key in env, nil when absent
  -- or unreadable.
  local function header_value(env, key)
    local idlen, pos = read_uvarint(env, ENV_HEADER + 1)
    if not idlen then
      return nil
    end
    local count, p = read_uvarint(env, pos + idlen)
    if not count then
      return nil
    end
    for _ = 1, count do
      local kl, q = read_uvarint(env, p)
      if not kl then
        return nil
      end
      local vl, r = read_uvarint(env, q + kl)
      if not vl or r + vl - 1 > #env then
        return nil
      end
      if string.sub(env, q, q + kl - 1) == key then
        return string.sub(env, r, r + vl - 1)
      end
      p = r + vl
    end
    return nil
  end

  -- S.with_failure returns env with the failure err added to its last
  -- errors, and last (err, or err with which attempt it was) as its last
  -- failure. Bytes that are no envelope come back as they are.
  function S.with_failure(env, err, last)
    if not is_envelope(env) then
      return env
    end
    local list = {}
    local old = header_value(env, HEADER_ERRORS)
    if old then
      local ok, v = pcall(cjson.decode, old)
      if ok and type(v) == 'table' then
        for i = math.max(1, #v - ERRORS_KEPT + 2), #v do
          if type(v[i]) == 'string' then
            list[#list + 1] = v[i]
          end
        end
      end
    end
    list[#list + 1] = string.sub(err, 1, ERROR_MAX)
    return with_header(with_header(env, HEADER_ERROR, last), HEADER_ERRORS, cjson.encode(list))
  end

  -- S.dead_letter returns env as a dead letter: its failure err recorded
  -- (S.with_failure), when it died, after how many deliveries, without
  -- its deadline, and its attempt counter at 0 (the dead-letter queue
  -- counts its own deliveries).
  function S.dead_letter(env, err, last, deliveries)
    if not is_envelope(env) then
      return env
    end
    env = with_header(S.with_failure(env, err, last), HEADER_DEAD_AT, tostring(now_ms()))
    env = with_header(env, HEADER_ATTEMPTS, tostring(deliveries))
    return with_attempt(without_deadline(env), 0)
  end

  -- S.dead_at returns when env was dead-lettered (Unix ms), nil when it
  -- does not say.
  function S.dead_at(env)
    if not is_envelope(env) then
      return nil
    end
    return tonumber(header_value(env, HEADER_DEAD_AT))
  end

  story_fns = S
  return S
end

-- Priorities (docs/decisions.md "Priorities"). An item of priority 0 (the
-- default) goes to the ready list as always; an item of priority 1..9 (an
-- envelope extension, tag PRIO_TAG, one byte) goes to the queue's priority
-- set instead: member ready-seq(6 bytes)..envelope, score
-- (9 - priority) * PRIO_BAND + PRIO_MID +/- ready-seq, so ZPOPMIN takes the
-- highest priority first, then the first pushed (an item given back to the
-- head of the line gets - ready-seq: ahead of the others of its priority).
-- Every consumer takes from the priority set before the ready list.
--
-- Consumers block on the ready list only (BLMOVE). So that a blocked
-- consumer wakes for an item in the priority set, and a consumer that pops
-- the ready list without a script learns that the queue has priorities,
-- the ready list's tail (the next item popped) is PRIO_MARKER whenever the
-- priority set is not empty: the helpers put it there after each push to
-- the set and after each pop that leaves the set not empty, and a give
-- back to the tail keeps it there (ready_push); a pop that empties the
-- set drops it. The list holds at most one marker, at its tail, so every
-- count of ready items is X.ready_len. A consumer that pops the marker
-- drops it and takes from the priority set.
--
-- Each script run creates every function of this prelude anew, at a cost
-- per function, so the functions that only a queue with priorities needs
-- are built on first use, by prio(): a queue without priorities creates
-- only the few small functions that look for priorities.
local PRIO_TAG = 1
local PRIO_MAX = 9
local PRIO_BAND = 281474976710656 -- 2^48
local PRIO_MID = 140737488355328 -- 2^47

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
    local pos, len = extra().ext_value(env, PRIO_TAG)
    if not pos then
      return 0
    end
    local p = string.byte(env, pos)
    if len ~= 1 or not p or p > PRIO_MAX then
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
    if redis.call('LINDEX', kReady, -1) ~= PRIO_MARKER then
      redis.call('RPUSH', kReady, PRIO_MARKER)
    end
  end

  -- P.edge returns the score for one more item at the head (or, head
  -- false, the tail) of priority band base, without the counter: one
  -- beyond the band's first (last) score, or its middle when the band is
  -- empty. edges keeps the scores given so far in this call, by band.
  function P.edge(kPrio, base, head, edges)
    local e = edges[base]
    if not e then
      local lo, hi = string.format('%.0f', base), '(' .. string.format('%.0f', base + PRIO_BAND)
      local r
      if head then
        r = redis.call('ZRANGEBYSCORE', kPrio, lo, hi, 'WITHSCORES', 'LIMIT', 0, 1)
      else
        r = redis.call('ZREVRANGEBYSCORE', kPrio, hi, lo, 'WITHSCORES', 'LIMIT', 0, 1)
      end
      e = tonumber(r[2]) or base + PRIO_MID
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
      local base = (PRIO_MAX - pri[2 * i - 1]) * PRIO_BAND
      local s, score
      if seq then
        s = seq + i
        score = base + PRIO_MID
        if head then
          score = score - s
        else
          score = score + s
        end
      else
        score = P.edge(kPrio, base, head, edges)
        s = math.abs(score - base - PRIO_MID)
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
      out[#out + 1] = string.sub(popped[i], SEQ_LEN + 1)
    end
    if #out > 0 then
      local marked = redis.call('LINDEX', kReady, -1) == PRIO_MARKER
      local left
      if card then
        left = card - #out
      else
        left = redis.call('ZCARD', kPrio)
      end
      if left > 0 and not marked then
        redis.call('RPUSH', kReady, PRIO_MARKER)
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
        if popped[i] == PRIO_MARKER then
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

-- Groups (blocking.WithGroup). An item's group is extension tag 3 of a
-- version 2 envelope (X.group); once a queue has had a grouped item (its
-- meta hash's 'groups'), items without one are the group '' (they take
-- their turn as one group). A ready item of group g is not in the ready
-- list but in g's own sorted set (<base>:g:<g>), scored like the priority
-- set (priority first, then order; P.edge places each one), so an empty
-- group has no key. Instead the ready list holds one TURN of each group
-- that may deliver (TURN .. g): a consumer that pops a turn takes the
-- group's first item and, if the group may deliver again, pushes the turn
-- to the back of the line. So the groups are served round-robin, one item
-- per group per turn, blocked consumers wake for them (BLMOVE), and a
-- group that may not deliver (paused, at its concurrency limit, waiting
-- for its rate limit) has no turn and costs nothing until it may again.
--
-- Per queue (<base> is the ready list's key without ':ready'):
--   <base>:gturn   SET   the groups with a turn out (in the list or claimed)
--   <base>:gsize   ZSET  group -> ready + in flight (Groups, largest first)
--   <base>:gflight HASH  group -> items leased (its concurrency)
--   <base>:gtok    HASH  lease token -> group, while the lease is held
--   <base>:gpaused SET   groups paused (PauseGroup)
--   <base>:gwait   ZSET  group -> when its rate limit lets it deliver, µs
--   <base>:meta    'gready' (ready items in groups), 'group_limit' (the
--                  most leases per group), 'group_interval_us' (the time
--                  between two delivery starts of a group)
-- Every entry of a group leaves these when the group is empty and idle,
-- but for gpaused (an operator's choice) and gwait (until its time).
local TURN = '\0\1'

-- TURN_HOLD is how long a turn may sit in the claimed list before the
-- reclaimer gives it back, ms (see reclaim.lua).
local TURN_HOLD = 2000

-- is_turn tells a group's turn from an item and from the priority marker.
local function is_turn(b)
  return string.byte(b, 1) == 0 and string.byte(b, 2) == 1
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
    redis.call('LPUSH', K.ready, TURN .. g)
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

-- gtake returns grp() with the helpers that take from groups (G.take,
-- G.resolve) and end their rate-limit waits (G.lift), added on first use.
local function gtake()
  local G = grp()
  if G.take then
    return G
  end

  -- G.take takes the first item of group g for a turn popped off the
  -- ready list: nil when the group may not deliver (the turn is dropped:
  -- what lets it deliver again gives it a new one). lease: the item is
  -- leased (it counts against the group's limits, and starts its rate
  -- wait); otherwise Take delivers it for good, holding nothing in flight.
  -- A group at its concurrency limit has no turn, for Take as for a lease.
  function G.take(K, g, lease)
    local key = G.items(K, g)
    local limit, interval = G.limits(K)
    local flight = 0
    if limit > 0 then
      flight = tonumber(redis.call('HGET', K.flight, g) or '0')
    end
    if redis.call('SISMEMBER', K.paused, g) == 1 or (limit > 0 and flight >= limit) then
      redis.call('SREM', K.turn, g)
      return nil
    end
    local p = redis.call('ZPOPMIN', key)
    if not p[1] then
      redis.call('SREM', K.turn, g)
      return nil
    end
    redis.call('HINCRBY', K.meta, 'gready', -1)
    if lease then
      flight = redis.call('HINCRBY', K.flight, g, 1)
    else
      G.shrink(K, g, 1)
    end
    if lease and interval > 0 then
      redis.call('SREM', K.turn, g)
      local at = us_str(now_us() + interval)
      redis.call('ZADD', K.wait, at, g)
      local head = redis.call('ZRANGE', K.wait, 0, 0)
      if head[1] == g then
        redis.call('PUBLISH', K.base .. ':wake', at)
      end
    elseif redis.call('EXISTS', key) == 1 and not (limit > 0 and flight >= limit) then
      redis.call('LPUSH', K.ready, TURN .. g)
    else
      redis.call('SREM', K.turn, g)
    end
    return string.sub(p[1], SEQ_LEN + 1)
  end

  -- G.resolve replaces the turns in out (entries popped off the ready list)
  -- with their groups' items, and takes more (take: take_ready, which
  -- names this builder) while turns gave none and the list has entries, up
  -- to n. It returns the items and, by position, the group each came from
  -- (nil: the ready list's own).
  function G.resolve(kReady, kPrio, n, out, lease, take)
    local K = G.keys(kReady)
    local items, groups = {}, {}
    while true do
      local gave = 0
      for i = 1, #out do
        local e = out[i]
        if is_turn(e) then
          local g = string.sub(e, 3)
          local env = G.take(K, g, lease)
          if env then
            items[#items + 1] = env
            groups[#items] = g
          end
        else
          items[#items + 1] = e
        end
        gave = gave + 1
      end
      if #items >= n or gave == 0 then
        break
      end
      out = take(kReady, kPrio, n - #items, false, lease, true)
    end
    return items, groups
  end

  -- G.lift moves the groups whose rate-limit wait is over (at now µs)
  -- back into the round: at most limit of them. It returns when the next
  -- wait ends (µs), or math.huge.
  function G.lift(K, now, limit)
    local due = redis.call('ZRANGEBYSCORE', K.wait, '-inf', us_str(now), 'LIMIT', 0, limit)
    if #due > 0 then
      redis.call('ZREM', K.wait, unpack(due))
      for i = 1, #due do
        if redis.call('EXISTS', G.items(K, due[i])) == 1 then
          G.turn(K, due[i])
        end
      end
    end
    local head = redis.call('ZRANGE', K.wait, 0, 0, 'WITHSCORES')
    return tonumber(head[2]) or math.huge
  end

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
        local base = (PRIO_MAX - prio().of(t[i])) * PRIO_BAND
        local score = prio().edge(key, base, head, edges)
        args[2 * i - 1] = string.format('%.0f', score)
        args[2 * i] = seq_bytes(math.abs(score - base - PRIO_MID)) .. t[i]
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

-- groups_settled ends group leases among tokens (G.untoken), for the
-- scripts that settle leases; kMeta is the queue's meta hash. grouped: the
-- caller's answer to whether the queue has had a grouped item
-- (count_check's): false costs nothing; nil: one EXISTS tells.
local function groups_settled(kMeta, tokens, grouped)
  if #tokens == 0 or grouped == false then
    return
  end
  local base = string.sub(kMeta, 1, -5)
  if grouped == nil and redis.call('EXISTS', base .. 'gtok') == 0 then
    return
  end
  local G = grp()
  G.untoken(G.keys(base .. 'ready'), tokens)
end

-- take_ready takes up to n ready items in take order: the priority set's
-- first, then the ready list's, each turn of a group met on the way
-- replaced by that group's next item (G.resolve) unless raw (then turns
-- come as they are). While the priority set is empty, so is the ready list
-- of markers, and this is one RPOP and one pass over what it popped: a
-- queue that never had an item of priority or of a group pays nothing more
-- for them. marked: the caller's blocking wait returned the marker (so the
-- set likely holds items). lease: the items are leased (they count against
-- the groups' limits), not delivered for good. It returns the items and,
-- when a turn was met, by position, the group of each that came from one
-- (nil otherwise).
local function take_ready(kReady, kPrio, n, marked, lease, raw)
  if n <= 0 then
    return {}
  end
  local out
  if marked then
    out = prio().take(kReady, kPrio, n, {})
  else
    out = redis.call('RPOP', kReady, n)
    if not out then
      return {}
    end
    local m
    for i = 1, #out do
      if out[i] == PRIO_MARKER then
        m = i
        break
      end
    end
    if m then
      -- The priority set holds items: they come before what was popped
      -- past the marker, which goes back (unless the set's key is of the
      -- wrong type: then everything goes back, and the call fails).
      local popped = out
      local card = redis.pcall('ZCARD', kPrio)
      if type(card) == 'table' and card.err then
        local all = {}
        for i = #popped, 1, -1 do
          all[#all + 1] = popped[i]
        end
        redis.call('RPUSH', kReady, unpack(all))
        error(card)
      end
      local back = {}
      out = {}
      for i = 1, m - 1 do
        out[#out + 1] = popped[i]
      end
      for i = #popped, m + 1, -1 do
        if popped[i] ~= PRIO_MARKER then
          back[#back + 1] = popped[i]
        end
      end
      if #back > 0 then
        redis.call('RPUSH', kReady, unpack(back))
      end
      out = prio().take(kReady, kPrio, n, out, card)
    end
  end
  if not raw then
    for i = 1, #out do
      if is_turn(out[i]) then
        return gtake().resolve(kReady, kPrio, n, out, lease, take_ready)
      end
    end
  end
  return out
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
  local marked = redis.call('LINDEX', kReady, -1) == PRIO_MARKER
  if marked then
    redis.call('RPOP', kReady)
  end
  for i = 1, #envs do
    if envs[i] == PRIO_MARKER then
      local items = {}
      for j = 1, #envs do
        if envs[j] ~= PRIO_MARKER then
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
    redis.call('RPUSH', kReady, PRIO_MARKER)
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

-- max_attempts_of returns the max attempts v recorded in a queue's meta
-- hash (HGET's reply) when it is a positive integer in decimal digits, as
-- every process writes it, and default otherwise: none recorded, or a
-- foreign write that tonumber would misread ('ten' is nil; 'nan' and 'inf'
-- are never reached by an attempt, so an item would never dead-letter;
-- '0x10' is 16, '1.5', ' 5' and '1e1' are numbers no process writes; '0'
-- and '-3' would dead-letter every failure).
local function max_attempts_of(v, default)
  if v and string.match(v, '^[1-9]%d*$') then
    return tonumber(v)
  end
  return tonumber(default)
end

-- seq_usable tells whether INCRBY would take the counter kSeq: it is
-- absent or holds an integer. It reads the key without failing, whatever
-- it holds.
local function seq_usable(kSeq)
  local v = redis.pcall('GET', kSeq)
  if type(v) == 'table' then
    return false -- another type: an error reply
  end
  return not v or v == '0' or (#v < 19 and string.match(v, '^%-?[1-9]%d*$') ~= nil)
end

-- seq_check reads the counter kSeq before a script's first write, when
-- the script may push items of priority (ready_push increments kSeq for
-- them): a value INCRBY refuses (another type, or no integer) fails the
-- call there, not after the script has deleted what it was pushing.
local function seq_check(kSeq)
  local v = redis.call('GET', kSeq)
  if v and v ~= '0' and not (#v < 19 and string.match(v, '^%-?[1-9]%d*$')) then
    error({err = 'ERR ' .. kSeq .. ' holds no integer counter'})
  end
end


-- What was settled, counted (blocking.Stats.Processed and Failed, and
-- inspect's History): the queue's meta hash keeps the totals, its history
-- hash one field per minute and kind ('<minute>p' processed, '<minute>f'
-- failed; minute = Unix ms / 60000, server clock). The first count of a
-- minute drops the fields older than HISTORY_MINUTES and makes the hash
-- expire an hour after that window, so a queue keeps at most a day of
-- minutes (2,880 fields), and nothing once idle for longer.
local HISTORY_MINUTES = 1440

-- count_check reads the keys count_settled writes, before a script's first
-- write: a key of another type fails the call while it has changed nothing.
-- grouped: the read of the meta hash is that of its 'groups' flag, and the
-- answer whether the queue has had a grouped item (groups_settled,
-- ready_push); otherwise it is HLEN, O(1) where a field is a scan of the
-- small hash.
local function count_check(kMeta, kHist, grouped)
  redis.call('HLEN', kHist)
  if grouped then
    return redis.call('HEXISTS', kMeta, 'groups') == 1
  end
  redis.call('HLEN', kMeta)
end

-- count_settled counts n items settled as kind: 'p' processed (acked, or
-- delivered by Take), 'f' failed (a failed attempt).
local function count_settled(kMeta, kHist, kind, n)
  if n <= 0 then
    return
  end
  if kind == 'p' then
    redis.call('HINCRBY', kMeta, 'processed', n)
  else
    redis.call('HINCRBY', kMeta, 'failed', n)
  end
  local minute = math.floor(now_ms() / 60000)
  if redis.call('HINCRBY', kHist, minute .. kind, n) ~= n then
    return
  end
  local old = {}
  for _, f in ipairs(redis.call('HKEYS', kHist)) do
    local m = tonumber(string.sub(f, 1, -2))
    if not m or m <= minute - HISTORY_MINUTES then
      old[#old + 1] = f
    end
  end
  for i = 1, #old, 1000 do
    redis.call('HDEL', kHist, unpack(old, i, math.min(i + 999, #old)))
  end
  redis.call('PEXPIRE', kHist, (HISTORY_MINUTES + 60) * 60000)
end

-- dead_bound keeps at most the queue's dead_max dead letters (its meta
-- hash, written by a process given blocking.WithDeadLetterBounds) in kDead
-- after a push, dropping the oldest (the list's right end), counted in the
-- meta hash's dead_dropped. No bound recorded: nothing is dropped. The
-- caller has read kMeta and kDead before its first write.
local function dead_bound(kMeta, kDead)
  local max = tonumber(redis.call('HGET', kMeta, 'dead_max') or '')
  if not max or max < 1 then
    return 0
  end
  local n = redis.call('LLEN', kDead)
  if n <= max then
    return 0
  end
  redis.call('LTRIM', kDead, 0, max - 1)
  redis.call('HINCRBY', kMeta, 'dead_dropped', n - max)
  return n - max
end

-- dead_expire drops, oldest first, up to limit dead letters of kDead that
-- were dead-lettered more than the queue's dead_max_age_ms ago (its meta
-- hash), counted in dead_dropped; it stops at the first younger one, or
-- one that does not say when it died.
local function dead_expire(kMeta, kDead, now, limit)
  local age = tonumber(redis.call('HGET', kMeta, 'dead_max_age_ms') or '')
  if not age or age < 1 then
    return 0
  end
  local dropped = 0
  for _ = 1, limit do
    local oldest = redis.call('LINDEX', kDead, -1)
    local at = oldest and story().dead_at(oldest)
    if not at or at >= now - age then
      break
    end
    redis.call('RPOP', kDead)
    dropped = dropped + 1
  end
  if dropped > 0 then
    redis.call('HINCRBY', kMeta, 'dead_dropped', dropped)
  end
  return dropped
end
