-- pause: pause or resume handing out a queue's items. The flag lives in the
-- queue's meta hash, so it holds for every process and survives restarts;
-- receive.lua checks it on every call, and transfers report it to their
-- process with each run. The change is published on the queue's wake-up
-- channel ('pause' or 'resume'), so every process learns it at once.
--
-- KEYS[1] -> redelay:{q}:meta       HASH  paused
-- ARGV[1] -> wake-up channel
-- ARGV[2] -> '1' to pause, '0' to resume
--
-- Output: 1 when the flag changed, 0 when it was already so.
local was = redis.call('HEXISTS', KEYS[1], 'paused')
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], 'paused', '1')
  redis.call('PUBLISH', ARGV[1], 'pause')
  return 1 - was
end
redis.call('HDEL', KEYS[1], 'paused')
redis.call('PUBLISH', ARGV[1], 'resume')
return was
