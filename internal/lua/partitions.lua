-- partitions: record the number of partitions a queue is opened with
-- (blocking.WithPartitions) in its partition 0's meta hash, unless one is
-- recorded already, and return the recorded number. Every process opening
-- the queue runs it on its first call, a queue of one partition included,
-- so two processes that disagree cannot both be accepted, whichever comes
-- first. A queue with no record whose partition 0 holds items (or any key
-- but its meta hash, which a process's transfer writes in the background
-- before its first call) was used without partitions by a process that
-- recorded nothing: it is recorded as 1, whatever this call asked for.
--
-- KEYS[1]  -> redelay:{q}:meta   HASH  field partitions
-- KEYS[2..] -> the keys of partition 0 that a queue in use holds
--             (delayed, items, seq, retry, ready, prio, leases, inflight,
--             claimed, dead:ready, dead:prio, schedules)
-- ARGV[1]  -> the number of partitions this process opened the queue with
--
-- Output: the recorded number, as the meta hash holds it (a string, which
-- the caller checks: a foreign write may hold anything)
local recorded = redis.call('HGET', KEYS[1], 'partitions')
if recorded then
  return recorded
end
local n = ARGV[1]
if n ~= '1' and redis.call('EXISTS', unpack(KEYS, 2)) > 0 then
  n = '1'
end
redis.call('HSET', KEYS[1], 'partitions', n)
return n
