-- group_list: a page of the ready items held in a queue's groups (see
-- Groups in prelude.lua), group by group, largest group first (then by
-- key), each group's in its take order. Changes nothing. It reads every
-- group's size up to the page (O(groups before the page)): an operator's
-- listing, not a consumer's path.
--
-- KEYS[1] -> redelay:{q}:ready   LIST  (names the queue; the group keys
--            are derived from it)
-- ARGV[1] -> offset among the groups' items
-- ARGV[2] -> how many at most
--
-- Output: flat triples {group, member of the group's set, envelope}

local G = grp()
local K = G.keys(KEYS[1])
local skip, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local out = {}
if n <= 0 then
  return out
end
local gs = redis.call('ZREVRANGE', K.size, 0, -1)
for i = 1, #gs do
  local key = G.items(K, gs[i])
  local c = redis.call('ZCARD', key)
  if skip >= c then
    skip = skip - c
  else
    local ms = redis.call('ZRANGE', key, skip, skip + n - 1)
    skip = 0
    for j = 1, #ms do
      out[#out + 1] = gs[i]
      out[#out + 1] = ms[j]
      out[#out + 1] = string.sub(ms[j], SEQ_LEN + 1)
      n = n - 1
    end
    if n <= 0 then
      break
    end
  end
end
return out
