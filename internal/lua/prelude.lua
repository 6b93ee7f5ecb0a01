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
-- attempt; the ID follows as uvarint length + bytes.
local ENV_VERSION = 1
local ENV_HEADER = 21
local ENV_ATTEMPT = 18 -- 1-based position of the attempt field

-- envelope_id returns the ID of an envelope, or nil and why it is unreadable.
local function envelope_id(env)
  if string.byte(env, 1) ~= ENV_VERSION then
    return nil, 'unknown envelope version ' .. tostring(string.byte(env, 1))
  end
  if #env <= ENV_HEADER then
    return nil, 'envelope too short'
  end
  local len, shift, pos = 0, 1, ENV_HEADER + 1
  while true do
    local byte = string.byte(env, pos)
    if byte == nil or pos > ENV_HEADER + 5 then
      return nil, 'bad ID length'
    end
    len = len + (byte % 128) * shift
    shift = shift * 128
    pos = pos + 1
    if byte < 128 then
      break
    end
  end
  if pos + len - 1 > #env then
    return nil, 'ID overruns envelope'
  end
  return string.sub(env, pos, pos + len - 1)
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

