-- reclaim: make items whose lease expired ready again, at the head of the
-- list (next to be received), earliest lease first, with the failed delivery
-- counted in the envelope's attempt counter. Items that used up their
-- attempts (max_attempts in the meta hash, or ARGV[2] when none is
-- recorded or it is no positive integer) go to the dead letters instead,
-- the reason in their error header, without their deadline
-- (story().dead_letter). Each expired lease counts as a failed attempt, its
-- error added to the item's last errors (count_settled). The dead letters
-- are kept within the queue's bounds, if it has any (dead_bound,
-- dead_expire). An in-flight
-- entry that is no envelope at all (see is_envelope) goes to the dead
-- letters as it is, as in receive.lua. The slot each lease of a group held
-- in its group is freed (groups_settled).
--
-- It also gives back items stranded in the claimed list: an item a waiting
-- consumer moved there (BLMOVE) but never leased or took, because the reply
-- was lost with its connection or the consumer died. An item is given back
-- once it has been seen in the list for ARGV[3] ms: far longer than a live
-- consumer needs, and than the client's resend of a lost reply can take.
-- A group's turn goes back sooner, after TURN_HOLD ms: a consumer acts on
-- a claimed turn only if it is still claimed (it removes it first), so
-- giving it back early is always safe, and the group is not held up for
-- long by a consumer that died holding its turn.
--
-- Every key is read before the first write (the counter's value too:
-- seq_check), and every entry is judged before the first delete, so a call
-- that fails changes nothing.
--
-- KEYS[1] -> redelay:{q}:leases        ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight      HASH  token -> envelope
-- KEYS[3] -> redelay:{q}:ready         LIST
-- KEYS[4] -> redelay:{q}:meta          HASH  max_attempts
-- KEYS[5] -> redelay:{q}:claimed       LIST
-- KEYS[6] -> redelay:{q}:claimed:seen  HASH  envelope -> first seen ms
-- KEYS[7] -> redelay:{q}:dead:ready    LIST
-- KEYS[8] -> redelay:{q}:prio          ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[9] -> redelay:{q}:seq           STRING counter (seq_check)
-- KEYS[10] -> redelay:{q}:history      HASH  failed per minute (count_settled)
-- ARGV[1] -> batch limit
-- ARGV[2] -> max attempts when the meta hash has none
-- ARGV[3] -> how long an item stays in the claimed list before it is given back, ms
--
-- Output: {made ready, next lease deadline ms or -1, server now ms,
--          max attempts, given back from the claimed list, dead-lettered,
--          then the IDs of the dead-lettered items ('' for one whose ID
--          cannot be read, such as bytes that are no envelope)}

local now = now_ms()
local limit = tonumber(ARGV[1])
local tokens = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit)
-- A max_attempts that is no positive integer (a foreign write) counts as
-- none (max_attempts_of).
local max = max_attempts_of(redis.call('HGET', KEYS[4], 'max_attempts'), ARGV[2])
local claimed = redis.call('LRANGE', KEYS[5], 0, limit - 1)
local seen = redis.call('HGETALL', KEYS[6])
ready_check(KEYS[3], KEYS[8])
redis.call('LLEN', KEYS[7])
seq_check(KEYS[9])
local grouped = count_check(KEYS[4], KEYS[10], true)
local envs = {}
if #tokens > 0 then
  envs = redis.call('HMGET', KEYS[2], unpack(tokens))
end

local out = {0, -1, now, max, 0, 0}
local back, held, dead, failed = {}, {}, {}, 0
for i = 1, #tokens do
  local token, env = tokens[i], envs[i]
  if env then
    held[#held + 1] = token
    if not is_envelope(env) then
      dead[#dead + 1] = env
      out[#out + 1] = ''
    else
      local attempt = attempt_of(env) + 1
      failed = failed + 1
      if attempt >= max then
        local why = 'lease expired on attempt ' .. attempt .. ' of ' .. max
        dead[#dead + 1] = story().dead_letter(env, 'lease expired', why, attempt)
        out[#out + 1] = envelope_id(env) or ''
      else
        back[#back + 1] = with_attempt(story().with_failure(env, 'lease expired', 'lease expired'), attempt)
      end
    end
  end
end
if #held > 0 then
  redis.call('HDEL', KEYS[2], unpack(held))
end
if #tokens > 0 then
  redis.call('ZREM', KEYS[1], unpack(tokens))
end
count_settled(KEYS[4], KEYS[10], 'f', failed)
-- Pushed to the head newest-first, so the longest-leased is received first.
if #back > 0 then
  local rev = {}
  for i = #back, 1, -1 do
    rev[#rev + 1] = back[i]
  end
  ready_push(KEYS[3], KEYS[8], KEYS[9], rev, true, grouped)
end
out[1] = #back
groups_settled(KEYS[4], held, grouped)
if #dead > 0 then
  redis.call('LPUSH', KEYS[7], unpack(dead))
  out[6] = #dead
  dead_bound(KEYS[4], KEYS[7])
end
dead_expire(KEYS[4], KEYS[7], now, limit)

-- The claimed list: give back what has been there too long; remember when
-- the rest was first seen; forget what left.
if #claimed > 0 or #seen > 0 then
  local first = {}
  for i = 1, #seen, 2 do
    first[seen[i]] = tonumber(seen[i + 1])
  end
  local present, given = {}, {}
  for i = #claimed, 1, -1 do -- oldest first
    local env = claimed[i]
    local t = first[env]
    if t and (now - t >= tonumber(ARGV[3]) or (is_turn(env) and now - t >= TURN_HOLD)) then
      if redis.call('LREM', KEYS[5], -1, env) == 1 then
        given[#given + 1] = env
      end
    else
      present[env] = true
      if not t then
        redis.call('HSET', KEYS[6], env, now)
      end
    end
  end
  for env in pairs(first) do
    if not present[env] then
      redis.call('HDEL', KEYS[6], env)
    end
  end
  list_push(KEYS[3], KEYS[8], KEYS[9], given, true) -- they were in the ready list
  out[5] = #given
end

local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] ~= nil then
  out[2] = tonumber(head[2])
end
return out
