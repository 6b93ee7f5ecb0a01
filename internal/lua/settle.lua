-- settle: settle a delivery that failed, either by scheduling a retry in the
-- queue's retry set (due now + ARGV[4] µs; straight to the ready list when
-- that is now and nothing pending is due first) or by moving it to the dead
-- letters. The item is dead-lettered when the caller says so or when this
-- delivery (ARGV[5]) is the queue's last allowed attempt: max_attempts in
-- the queue's meta hash, which every process shares, or ARGV[7] when no
-- process has recorded one (or it is no positive integer). The failure
-- (ARGV[3]) goes into the envelope's error header and its last errors; a
-- dead letter's error header says which attempt of how many it was, its
-- headers when it died and after how many deliveries (story().dead_letter), and
-- it has no deadline (blocking.WithTTL: it ends when the item is
-- dead-lettered). A settled failure counts as failed (count_settled).
--
-- A lease of a group frees its slot in the group (groups_settled); a retry
-- goes back to its group when it is ready again.
--
-- With a lease token, the lease is settled: nothing changes when it is gone
-- (a second run after a lost reply, or a lease the reclaimer took back).
-- With an empty token the item is not leased (Take popped it, and it could
-- not be decoded): it is scheduled the same way.
--
-- Every key is read before the first write (the counter's value too:
-- seq_check), so a call that fails changes nothing.
--
-- KEYS[1] -> redelay:{q}:leases     ZSET  token -> lease deadline ms
-- KEYS[2] -> redelay:{q}:inflight   HASH  token -> envelope
-- KEYS[3] -> redelay:{q}:retry      ZSET  member len..nonce..envelope, score due µs
-- KEYS[4] -> redelay:{q}:delayed    ZSET  (read: is anything due first?)
-- KEYS[5] -> redelay:{q}:ready      LIST
-- KEYS[6] -> redelay:{q}:dead:ready LIST
-- KEYS[7] -> redelay:{q}:meta       HASH  max_attempts
-- KEYS[8] -> redelay:{q}:prio       ZSET  ready items of priority 1..9 (ready_push)
-- KEYS[9] -> redelay:{q}:seq        STRING counter (seq_check)
-- KEYS[10] -> redelay:{q}:history   HASH  failed per minute (count_settled)
-- ARGV[1] -> lease token, or '' for an item that is not leased
-- ARGV[2] -> the envelope, for an item that is not leased ('' otherwise)
-- ARGV[3] -> the failure, for the error header
-- ARGV[4] -> retry delay in µs
-- ARGV[5] -> this delivery's number (1-based)
-- ARGV[6] -> wake-up channel
-- ARGV[7] -> max attempts when the meta hash has none
-- ARGV[8] -> nonce for the retry-set member when ARGV[1] is ''
-- ARGV[9] -> 'dead' to dead-letter now, else 'retry'
--
-- Output: {status, max attempts}: status 0 when the lease was gone (nothing
-- changed); 1 retry scheduled; 2 retry ready at once; 3 dead-lettered.

local token = ARGV[1]
-- A max_attempts that is no positive integer (a foreign write) counts as
-- none (max_attempts_of).
local max = max_attempts_of(redis.call('HGET', KEYS[7], 'max_attempts'), ARGV[7])
local env = ARGV[2]
if token ~= '' then
  env = redis.call('HGET', KEYS[2], token)
  if not env then
    return {0, max}
  end
end
redis.call('ZCARD', KEYS[1])
ready_check(KEYS[5], KEYS[8])
redis.call('LLEN', KEYS[6])
seq_check(KEYS[9])
local grouped = count_check(KEYS[7], KEYS[10], true)
local attempt = tonumber(ARGV[5])
local dead = ARGV[9] == 'dead' or attempt >= max
local head = math.huge
if not dead then
  head = head_due(KEYS[4], KEYS[3])
end

if token ~= '' then
  redis.call('HDEL', KEYS[2], token)
  redis.call('ZREM', KEYS[1], token)
  groups_settled(KEYS[7], {token}, grouped)
end
count_settled(KEYS[7], KEYS[10], 'f', 1)
if dead then
  local why = ARGV[3]
  if ARGV[9] ~= 'dead' then
    why = why .. ' (attempt ' .. attempt .. ' of ' .. max .. ')'
  end
  -- The dead-letter queue counts its own deliveries; the failure that
  -- brought the item here is in its headers. A dead letter has no
  -- deadline.
  redis.call('LPUSH', KEYS[6], story().dead_letter(env, ARGV[3], why, attempt))
  dead_bound(KEYS[7], KEYS[6])
  return {3, max}
end

local us = now_us()
local due_us = us + tonumber(ARGV[4])
env = with_due(with_attempt(story().with_failure(env, ARGV[3], ARGV[3]), attempt), math.floor(due_us / 1000))
if due_us <= us and head > due_us then
  ready_push(KEYS[5], KEYS[8], KEYS[9], {env}, false, grouped)
  return {2, max}
end
local nonce = token
if nonce == '' then
  nonce = ARGV[8]
end
redis.call('ZADD', KEYS[3], us_str(due_us), retry_member(nonce, env))
if due_us < head then
  redis.call('PUBLISH', ARGV[6], us_str(due_us))
end
return {1, max}
