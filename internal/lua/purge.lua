-- purge: drop whole keys of one queue at once, and say how many items they
-- held. Redis frees the memory in the background (UNLINK), so purging a
-- million items does not block the server.
--
-- KEYS    -> the keys to drop (a queue's leases with its groups' counts of
--            them: gflight, gtok)
-- ARGV[i] -> '1' when KEYS[i] counts toward the result (a key that indexes
--            another, such as the items hash of the delayed set, does not);
--            'ready' for a ready list, whose priority set is KEYS[i + 1]
--            (ARGV[i + 1] '0'): the two count as X.ready_len counts them,
--            and the ready items of the queue's groups go too
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

-- drop_groups drops the ready items of every group of the queue whose
-- ready list is kReady (see Groups in prelude.lua): their sets, turns and
-- rate-limit waits; what groups hold in flight stays counted.
local function drop_groups(kReady)
  local G = grp()
  local K = G.keys(kReady)
  local gs = redis.call('ZRANGE', K.size, 0, -1)
  if #gs == 0 and redis.call('EXISTS', K.turn) == 0 then
    return
  end
  for i = 1, #gs do
    redis.call('UNLINK', G.items(K, gs[i]))
  end
  redis.call('UNLINK', K.turn, K.wait)
  redis.call('HDEL', K.meta, 'gready')
end

-- recount sets each group's size anew (ready + in flight) once the keys
-- are gone, dropping the groups left with nothing.
local function recount(kReady)
  local G = grp()
  local K = G.keys(kReady)
  local gs = redis.call('ZRANGE', K.size, 0, -1)
  for i = 1, #gs do
    local g = gs[i]
    local n = redis.call('ZCARD', G.items(K, g)) + tonumber(redis.call('HGET', K.flight, g) or '0')
    if n > 0 then
      redis.call('ZADD', K.size, n, g)
    else
      redis.call('ZREM', K.size, g)
    end
  end
end

local n = 0
for i = 1, #KEYS do
  if ARGV[i] == 'ready' then
    local tl, tz = redis.call('TYPE', KEYS[i])['ok'], redis.call('TYPE', KEYS[i + 1])['ok']
    if (tl == 'list' or tl == 'none') and (tz == 'zset' or tz == 'none') then
      n = n + extra().ready_len(KEYS[i], KEYS[i + 1])
      drop_groups(KEYS[i])
    else
      n = n + held(KEYS[i]) + held(KEYS[i + 1])
    end
  elseif ARGV[i] == '1' then
    n = n + held(KEYS[i])
  end
end
redis.call('UNLINK', unpack(KEYS))
for i = 1, #KEYS do
  if ARGV[i] == 'ready' and string.sub(KEYS[i], -11) ~= ':dead:ready' then
    recount(KEYS[i])
  end
end
return n
