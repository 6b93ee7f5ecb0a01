-- consumers: the registry of the processes consuming the queues of one key
-- prefix (blocking.Queue.Consume; inspect's Consumers). Each record is
-- '<last seen, Unix ms, server clock> <record JSON>', under the consumer's
-- ID. A put stamps the record with the server's clock and, when asked,
-- sweeps the records not seen for ARGV[4] ms (their processes crashed);
-- a list returns the clock and every record.
--
-- KEYS[1] -> redelay:consumers  HASH  consumer ID -> last seen ms .. ' ' .. JSON
-- ARGV[1] -> 'put' or 'list'
-- ARGV[2] -> the consumer's ID (put)
-- ARGV[3] -> its record, JSON (put)
-- ARGV[4] -> sweep records last seen more than this many ms ago ('0': none) (put)
--
-- Output: put: how many records were swept; list: {now ms, ID, record,
-- ID, record, ...}

local now = now_ms()
if ARGV[1] == 'list' then
  local out = redis.call('HGETALL', KEYS[1])
  table.insert(out, 1, tostring(now))
  return out
end
redis.call('HSET', KEYS[1], ARGV[2], now .. ' ' .. ARGV[3])
local gone = tonumber(ARGV[4])
if gone <= 0 then
  return 0
end
local all = redis.call('HGETALL', KEYS[1])
local stale = {}
for i = 1, #all, 2 do
  local seen = tonumber(string.match(all[i + 1], '^(%d+) '))
  if not seen or seen < now - gone then
    stale[#stale + 1] = all[i]
  end
end
for i = 1, #stale, 1000 do
  redis.call('HDEL', KEYS[1], unpack(stale, i, math.min(i + 999, #stale)))
end
return #stale
