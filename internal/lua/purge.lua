-- purge: drop whole keys of one queue at once, and say how many items they
-- held. Redis frees the memory in the background (UNLINK), so purging a
-- million items does not block the server.
--
-- KEYS    -> the keys to drop
-- ARGV[i] -> '1' when KEYS[i] counts toward the result (a key that indexes
--            another, such as the items hash of the delayed set, does not);
--            'ready' for a ready list, whose priority set is KEYS[i + 1]
--            (ARGV[i + 1] '0'): the two count as X.ready_len counts them
--
-- Output: how many items the counted keys held.

-- held counts the entries of a key of any type (0 for a string: a foreign
-- write holds no item).
local function held(key)
  local t = redis.call('TYPE', key)['ok']
  if t == 'list' then
    return redis.call('LLEN', key)
  elseif t == 'zset' then
    return redis.call('ZCARD', key)
  elseif t == 'hash' then
    return redis.call('HLEN', key)
  end
  return 0
end

local n = 0
for i = 1, #KEYS do
  if ARGV[i] == 'ready' then
    local tl, tz = redis.call('TYPE', KEYS[i])['ok'], redis.call('TYPE', KEYS[i + 1])['ok']
    if (tl == 'list' or tl == 'none') and (tz == 'zset' or tz == 'none') then
      n = n + extra().ready_len(KEYS[i], KEYS[i + 1])
    else
      n = n + held(KEYS[i]) + held(KEYS[i + 1])
    end
  elseif ARGV[i] == '1' then
    n = n + held(KEYS[i])
  end
end
redis.call('UNLINK', unpack(KEYS))
return n
