-- list: read a page of a sorted set whose members name entries of a hash,
-- in score order: the pending delayed items (member seq..id -> items hash,
-- score due µs) or the leases (member token -> inflight hash, score lease
-- deadline ms). It changes nothing. O(log N + limit).
--
-- KEYS[1] -> the sorted set: redelay:{q}:delayed or redelay:{q}:leases
-- KEYS[2] -> the hash: redelay:{q}:items or redelay:{q}:inflight
-- ARGV[1] -> offset (0-based rank)
-- ARGV[2] -> limit (at most a few thousand: results are unpacked)
-- ARGV[3] -> 'delayed' (members carry the seq prefix, hash values too) or
--            'leases' (members are hash fields as they are)
--
-- Output: a flat list of triples in score order {field, score, value}; an
--   entry whose hash field is gone (settled meanwhile) is left out.
local off, lim = tonumber(ARGV[1]), tonumber(ARGV[2])
local members = redis.call('ZRANGE', KEYS[1], off, off + lim - 1, 'WITHSCORES')
local n = #members / 2
if n == 0 then
  return {}
end
local delayed = ARGV[3] == 'delayed'
local fields = {}
for i = 1, n do
  local m = members[2 * i - 1]
  if delayed then
    m = string.sub(m, SEQ_LEN + 1)
  end
  fields[i] = m
end
local vals = redis.call('HMGET', KEYS[2], unpack(fields))
local out = {}
for i = 1, n do
  local v = vals[i]
  if v then
    if delayed then
      v = string.sub(v, SEQ_LEN + 1)
    end
    out[#out + 1] = fields[i]
    out[#out + 1] = members[2 * i]
    out[#out + 1] = v
  end
end
return out
