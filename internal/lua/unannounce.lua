-- unannounce: remove a queue from the registry of queues if no process
-- announced it since ARGV[2] (the retention sweep: a process that announced
-- it meanwhile uses it).
--
-- KEYS[1] -> redelay:queues  ZSET  queue name -> last announced, Unix ms
-- ARGV[1] -> the queue's name
-- ARGV[2] -> Unix ms: remove only if last announced before it
--
-- Output: 1 removed, 0 not

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) >= tonumber(ARGV[2]) then
  return 0
end
return redis.call('ZREM', KEYS[1], ARGV[1])
