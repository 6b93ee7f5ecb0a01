-- schedule_park: set aside a recurring schedule that cannot be planned (a
-- record that is no JSON, a spec that does not parse), so that the
-- transfers stop reading it on every run and the schedules due after it
-- are reached: its due entry moves to ARGV[3], when a process reads it
-- again. A due entry whose record is gone is removed. The call is a
-- compare-and-set on the record the client read: a record changed
-- meanwhile (Schedule replaced it) is left alone, due as set.
--
-- KEYS[1] -> redelay:{q}:schedules         HASH  name -> record
-- KEYS[2] -> redelay:{q}:schedules:due     ZSET  name -> when to materialize (ms)
-- ARGV[1] -> name
-- ARGV[2] -> the record the client read, '' when there was none
-- ARGV[3] -> when to read it again, Unix ms
--
-- Output: 1 set aside; 0 the due entry of a schedule with no record
--   removed; -1 the record changed since the client read it (nothing
--   changed).
local rec = redis.call('HGET', KEYS[1], ARGV[1]) or ''
redis.call('ZCARD', KEYS[2]) -- type check before the first write
if rec ~= ARGV[2] then
  return -1
end
if rec == '' then
  redis.call('ZREM', KEYS[2], ARGV[1])
  return 0
end
redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[1])
return 1
