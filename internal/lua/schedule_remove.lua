-- schedule_remove: delete a recurring schedule (delayed.Unschedule), and
-- the ticks it materialized that are still pending (IDs in ARGV), so none
-- fires after the call. The client computed the IDs from the record it
-- read: the call is a compare-and-set on that record, so a tick another
-- process materialized meanwhile is not missed (the client reads again).
--
-- KEYS[1] -> redelay:{q}:schedules         HASH
-- KEYS[2] -> redelay:{q}:schedules:values  HASH
-- KEYS[3] -> redelay:{q}:schedules:due     ZSET
-- KEYS[4] -> redelay:{q}:delayed           ZSET  member seq..id
-- KEYS[5] -> redelay:{q}:items             HASH  id -> seq..envelope
-- ARGV[1] -> name
-- ARGV[2] -> the record the client read ('' for none)
-- ARGV[3..] -> IDs of pending ticks to remove
--
-- Output: 1 when the schedule existed, 0 when it did not, -1 when the
--   record changed since the client read it (nothing changed).
if (redis.call('HGET', KEYS[1], ARGV[1]) or '') ~= ARGV[2] then
  return -1
end
redis.call('HLEN', KEYS[2]) -- type checks before the first write
redis.call('ZCARD', KEYS[3])
redis.call('ZCARD', KEYS[4])
redis.call('HLEN', KEYS[5])
local existed = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
for i = 3, #ARGV do
  remove_pending(KEYS[4], KEYS[5], ARGV[i])
end
return existed
