-- remove: cancel a pending item by id, in O(log N).
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- ARGV[1] -> id
--
-- Output: 1 if the item was pending and is now removed, 0 otherwise.

local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then
  return 0
end
redis.call('ZCARD', KEYS[1]) -- type check before the first write
redis.call('ZREM', KEYS[1], string.sub(v, 1, SEQ_LEN) .. ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
