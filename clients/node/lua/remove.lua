-- remove_pending cancels the pending delayed item id (its items-hash entry
-- names its delayed-set member) and reports whether there was one. The
-- caller has read both keys' types already.
local function remove_pending(kDelayed, kItems, id)
  local v = redis.call('HGET', kItems, id)
  if not v then
    return false
  end
  redis.call('ZREM', kDelayed, string.sub(v, 1, 6) .. id)
  redis.call('HDEL', kItems, id)
  return true
end

-- remove: cancel a pending item by id, in O(log N).
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- ARGV[1] -> id
--
-- Output: 1 if the item was pending and is now removed, 0 otherwise.

redis.call('ZCARD', KEYS[1]) -- type check before the first write
if remove_pending(KEYS[1], KEYS[2], ARGV[1]) then
  return 1
end
return 0
