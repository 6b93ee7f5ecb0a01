-- Writes n pending items in one of the measured layouts (docs/benchmarks.md,
-- "The one layout that would meet it"), with the sizes of the ID-sized
-- memory workload: IDs "100001".., a 6-byte order counter.
--
-- ARGV[1] -> n, the items
-- ARGV[2] -> 'redelay' (sorted set + one ID hash), 'bucketed' (sorted
--            set + n/100 ID hashes), or 'redisson' (sorted set + list)
-- ARGV[3] -> bytes of envelope after the counter (43 today)
-- Output: n
local n, layout, envlen = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local env = string.rep('x', envlen)
local buckets = math.max(1, math.floor(n / 100))
for i = 1, n do
  local id = tostring(100000 + i)
  if layout == 'redisson' then
    -- 1-byte length, 8 random bytes, 4-byte length, the JSON value.
    local v = string.rep('r', 13) .. '{"ID":' .. id .. ',"Pad":""}'
    redis.call('ZADD', 'z', 1796186112253 + i, v)
    redis.call('RPUSH', 'l', v)
  else
    local seq = string.format('%06d', i)
    redis.call('ZADD', 'z', 1.796186112253339e+15 + i, seq .. id)
    if layout == 'redelay' then
      redis.call('HSET', 'h', id, seq .. env)
    else
      local b = tonumber(redis.sha1hex(id):sub(1, 6), 16) % buckets
      redis.call('HSET', 'h:' .. b, id, seq .. env)
    end
  end
end
return n
