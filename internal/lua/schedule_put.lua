-- schedule_put: create or replace a recurring schedule (delayed.Schedule).
-- The schedule's state is a JSON record the client computes (spec, next
-- tick to materialize, last tick materialized, missed-tick policy); this
-- script only stores it, compare-and-set against the record the client
-- read, so two processes upserting the same schedule cannot interleave.
-- When the spec changed, the ticks the old spec had materialized and that
-- are still pending (IDs in ARGV) are removed, so no tick of the old spec
-- fires after the change.
--
-- KEYS[1] -> redelay:{q}:schedules         HASH  name -> record
-- KEYS[2] -> redelay:{q}:schedules:values  HASH  name -> tick envelope (empty ID)
-- KEYS[3] -> redelay:{q}:schedules:due     ZSET  name -> when to materialize (ms)
-- KEYS[4] -> redelay:{q}:delayed           ZSET  member seq..id
-- KEYS[5] -> redelay:{q}:items             HASH  id -> seq..envelope
-- ARGV[1] -> wake-up channel (transfers run at once and see the schedule)
-- ARGV[2] -> name
-- ARGV[3] -> the record the client read, '' when there was none
-- ARGV[4] -> the new record
-- ARGV[5] -> the tick envelope
-- ARGV[6] -> when to materialize the next tick, Unix ms
-- ARGV[7..] -> IDs of pending ticks to remove
--
-- Output: 1 stored; 0 the record changed since the client read it
--   (nothing changed: read again and retry).
local old = redis.call('HGET', KEYS[1], ARGV[2]) or ''
if old ~= ARGV[3] then
  return 0
end
redis.call('HLEN', KEYS[2]) -- type checks before the first write
redis.call('ZCARD', KEYS[3])
redis.call('ZCARD', KEYS[4])
redis.call('HLEN', KEYS[5])
redis.call('HSET', KEYS[1], ARGV[2], ARGV[4])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[5])
redis.call('ZADD', KEYS[3], ARGV[6], ARGV[2])
for i = 7, #ARGV do
  remove_pending(KEYS[4], KEYS[5], ARGV[i])
end
redis.call('PUBLISH', ARGV[1], 'schedule')
return 1
