-- get: read one pending delayed item by id, with its exact due time. It
-- changes nothing.
--
-- KEYS[1] -> redelay:{q}:delayed   ZSET  member seq..id, score due µs
-- KEYS[2] -> redelay:{q}:items     HASH  id -> seq..envelope
-- ARGV[1] -> id
--
-- Output: false when no item with this id is pending; else {envelope, due µs}.
local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then
  return false
end
local score = redis.call('ZSCORE', KEYS[1], string.sub(v, 1, SEQ_LEN) .. ARGV[1])
if not score then
  return false
end
return {string.sub(v, SEQ_LEN + 1), score}
