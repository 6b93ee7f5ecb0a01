-- Writes (op 'add') or deletes (op 'del') n pending items in one layout, to
-- time the per-item server cost of addressing a bucket of the ID index
-- (docs/benchmarks.md, "The one layout that would meet it"); cost.sh reads
-- the call's time from INFO commandstats.
--
-- ARGV[1] -> n, the items
-- ARGV[2] -> 'redelay' (one ID hash) or 'bucketed' (n/100 ID hashes, the
--            bucket chosen by a 32-bit FNV-1a of the ID, the bucket's size
--            read after each insert, as a split check would)
-- ARGV[3] -> 'add' or 'del'
-- Output: n
local n, layout, op = tonumber(ARGV[1]), ARGV[2], ARGV[3]
local env = string.rep('x', 43)
local buckets = math.max(1, math.floor(n / 100))
local function bucket(id)
  local h = 2166136261
  for i = 1, #id do
    h = bit.bxor(h, string.byte(id, i))
    h = (bit.band(h, 0xffff) * 16777619 + bit.band(bit.rshift(h, 16) * 16777619, 0xffff) * 65536) % 4294967296
  end
  return 'h:' .. (h % buckets)
end
for i = 1, n do
  local id = tostring(100000 + i)
  local seq = string.format('%06d', i)
  if op == 'add' then
    redis.call('ZADD', 'z', 1.796186112253339e+15 + i, seq .. id)
    if layout == 'redelay' then
      redis.call('HSET', 'h', id, seq .. env)
    else
      local b = bucket(id)
      redis.call('HSET', b, id, seq .. env)
      redis.call('HLEN', b)
    end
  else
    redis.call('ZREM', 'z', seq .. id)
    if layout == 'redelay' then
      redis.call('HDEL', 'h', id)
    else
      redis.call('HDEL', bucket(id), id)
    end
  end
end
return n
