-- push: add one item to the ready list now (blocking.Queue.Offer).
--
-- KEYS[1] -> redelay:{q}:ready   LIST
-- ARGV[1] -> envelope (version byte, 16 bytes of times to fill in, rest)
--
-- Output: server now in Unix ms (the item's enqueue and due time).

local now = now_ms()

local stamp = be64(now)
redis.call('LPUSH', KEYS[1], string.sub(ARGV[1], 1, 1) .. stamp .. stamp .. string.sub(ARGV[1], 18))
return now
