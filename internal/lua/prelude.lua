-- prelude: helpers prepended to every script by lua.go. Defines no keys.

-- now_ms returns the Redis server's clock in Unix milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- be64 encodes a non-negative integer as 8 big-endian bytes.
local function be64(n)
  local b = {}
  for i = 8, 1, -1 do
    b[i] = n % 256
    n = math.floor(n / 256)
  end
  return string.char(unpack(b))
end

