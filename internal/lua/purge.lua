-- purge: drop whole keys of one queue at once, and say how many items they
-- held. Redis frees the memory in the background (UNLINK), so purging a
-- million items does not block the server.
--
-- KEYS    -> the keys to drop
-- ARGV[i] -> '1' when KEYS[i] counts toward the result (a key that indexes
--            another, such as the items hash of the delayed set, does not)
--
-- Output: how many items the counted keys held.
local n = 0
for i = 1, #KEYS do
  if ARGV[i] == '1' then
    local t = redis.call('TYPE', KEYS[i])['ok']
    if t == 'list' then
      n = n + redis.call('LLEN', KEYS[i])
    elseif t == 'zset' then
      n = n + redis.call('ZCARD', KEYS[i])
    elseif t == 'hash' then
      n = n + redis.call('HLEN', KEYS[i])
    end
  end
end
redis.call('UNLINK', unpack(KEYS))
return n
