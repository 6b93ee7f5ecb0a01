-- prelude: helpers prepended to every script by lua.go. Defines no keys.

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
-- (one string.char call: a third of the cost of filling a table, measured).
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
-- attempt; the ID follows as uvarint length + bytes. Every version keeps
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
