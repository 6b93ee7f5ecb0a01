-- forget: delete what a queue (one partition) leaves behind once it holds
-- nothing: its meta hash (settings, codec, totals), offer counter, history,
-- the reclaimer's notes, the rate and slot keys, and the same of its dead
-- letters. It refuses, changing nothing, while any item is stored: pending,
-- retrying, ready (a lone priority marker does not count), in flight,
-- claimed, dead, in a group, or a recurring schedule.
--
-- KEYS[1..13]  -> the keys that hold items: delayed, retry, prio, inflight,
--                 claimed, schedules, dead:delayed, dead:retry, dead:prio,
--                 dead:inflight, dead:claimed, ready, dead:ready
-- KEYS[14..]   -> the keys deleted when the queue holds nothing (the two
--                 ready lists again among them, for a marker or turns
--                 left alone, and the keys of the groups)
--
-- Output: how many items are stored (0: forgotten)

local held = 0
for i = 1, 11 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t == 'zset' then
    held = held + redis.call('ZCARD', KEYS[i])
  elseif t == 'hash' then
    held = held + redis.call('HLEN', KEYS[i])
  elseif t == 'list' then
    held = held + redis.call('LLEN', KEYS[i])
  elseif t ~= 'none' then
    held = held + 1 -- another type: not ours to delete
  end
end
for i = 12, 13 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t == 'list' then
    -- Neither the priority marker nor the turns of groups are items.
    local n = redis.call('LLEN', KEYS[i]) - redis.call('SCARD', string.sub(KEYS[i], 1, -6) .. 'gturn')
    if n > 1 or (n == 1 and redis.call('LINDEX', KEYS[i], -1) ~= PRIO_MARKER) then
      held = held + n
    end
  elseif t ~= 'none' then
    held = held + 1
  end
  -- Items in groups (see Groups in prelude.lua).
  held = held + redis.call('ZCARD', string.sub(KEYS[i], 1, -6) .. 'gsize')
end
if held > 0 then
  return held
end
redis.call('DEL', unpack(KEYS, 12))
return 0
