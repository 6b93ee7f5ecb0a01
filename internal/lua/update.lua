-- update: replace the value of one pending delayed item, in place: its ID,
-- due time, headers, attempt counter and place in the delayed set stay.
-- O(1). Only the payload of the stored envelope changes: the script finds
-- where it starts (after the ID, the headers and, from version 2, the
-- extension fields) and keeps everything before it byte for byte.
--
-- The queue's payload limit counts the value and the producer's headers,
-- as an offer does (queue.Core.Encode): not the trace context's headers,
-- which the propagator writes, nor redelay's own.
--
-- KEYS[1] -> redelay:{q}:items     HASH  id -> seq..envelope
-- ARGV[1] -> id
-- ARGV[2] -> the new payload (the codec's bytes)
-- ARGV[3] -> the payload limit in bytes, 0 for none
--
-- Output: 1 updated; 0 no item with this id is pending; -n when the new
--   payload and the item's headers, n bytes in all, are over the limit
--   (nothing changed); an ENVELOPE error when the stored bytes are no
--   envelope, or an envelope of a version this release cannot rewrite, or
--   a corrupt one (nothing changed; the client wraps it in ErrCorrupt).
local v = redis.call('HGET', KEYS[1], ARGV[1])
if not v then
  return 0
end
local env = string.sub(v, SEQ_LEN + 1)
local version = string.byte(env, 1)
if not is_envelope(env) then
  return redis.error_reply('ENVELOPE item ' .. ARGV[1] .. ': not an envelope')
end
if version > 2 then
  return redis.error_reply('ENVELOPE item ' .. ARGV[1] .. ': envelope version ' .. tostring(version) .. ' cannot be rewritten by this release')
end
-- skip_string returns the position after the string at pos, and the
-- string; nil when env ends first.
local function skip_string(pos)
  local len, p = read_uvarint(env, pos)
  if not len or p + len - 1 > #env then
    return nil
  end
  return p + len, string.sub(env, p, p + len - 1)
end
local not_counted = {traceparent = true, tracestate = true, baggage = true}
local header_bytes = 0
local pos = skip_string(ENV_HEADER + 1) -- the ID
local count
if pos then
  count, pos = read_uvarint(env, pos)
end
for _ = 1, (count or 0) do
  if not pos then
    break
  end
  local key, value
  pos, key = skip_string(pos)
  if pos then
    pos, value = skip_string(pos)
  end
  if value and not not_counted[key] and string.sub(key, 1, 8) ~= 'redelay-' then
    header_bytes = header_bytes + #key + #value
  end
end
if pos and version == 2 then
  local next
  count, next = read_uvarint(env, pos)
  pos = nil
  if count then
    pos = next
    for _ = 1, count do
      local tag
      tag, pos = read_uvarint(env, pos)
      if not tag then
        pos = nil
        break
      end
      pos = skip_string(pos)
      if not pos then
        break
      end
    end
  end
end
if not pos then
  return redis.error_reply('ENVELOPE item ' .. ARGV[1] .. ': corrupt envelope')
end
local limit = tonumber(ARGV[3])
local size = #ARGV[2] + header_bytes
if limit > 0 and size > limit then
  return -size
end
redis.call('HSET', KEYS[1], ARGV[1], string.sub(v, 1, SEQ_LEN) .. string.sub(env, 1, pos - 1) .. ARGV[2])
return 1
