-- pop: Take's pop: up to ARGV[1] ready items, from the priority set first
-- (highest priority, then oldest; see Priorities in prelude.lua), then the
-- oldest of the ready list, dropping the markers met on the way (a queue
-- that never held an item of priority pays one RPOP). When ARGV[2] is
-- PRIO_MARKER, the caller's blocking wait moved a marker to the claimed
-- list: it is dropped first; when it is a group's turn (TURN .. group), it
-- leaves the claimed list and the group's next item comes first. Every item taken that has not expired counts
-- as processed (count_settled): Take delivers it. Not idempotent: like
-- RPOP, a lost reply loses what it took (the caller does not resend it).
--
-- A call that fails changes nothing: the keys are read first
-- (count_check, ZCARD), and the ready list is read (LINDEX) before it is
-- written.
--
-- KEYS[1] -> redelay:{q}:ready      LIST
-- KEYS[2] -> redelay:{q}:prio       ZSET  ready items of priority 1..9
-- KEYS[3] -> redelay:{q}:claimed    LIST  items popped by waiting consumers
-- KEYS[4] -> redelay:{q}:meta       HASH  processed (count_settled)
-- KEYS[5] -> redelay:{q}:history    HASH  processed per minute
-- ARGV[1] -> how many items at most
-- ARGV[2] -> PRIO_MARKER or a group's turn to drop from the claimed list, or ''
-- ARGV[3] -> '1' when items may carry a deadline (blocking.WithTTL), else '0'
--
-- Output: the envelopes taken, in take order (empty when none)

count_check(KEYS[4], KEYS[5])
if ARGV[2] == PRIO_MARKER then
  redis.call('ZCARD', KEYS[2])
  redis.call('LREM', KEYS[3], 1, PRIO_MARKER)
end
local taken
if ARGV[2] ~= '' and ARGV[2] ~= PRIO_MARKER then
  -- A group's turn: the group's next item first.
  taken = {}
  if redis.call('LREM', KEYS[3], 1, ARGV[2]) == 1 and is_turn(ARGV[2]) then
    local G = gtake()
    taken[1] = G.take(G.keys(KEYS[1]), string.sub(ARGV[2], 3), false)
  end
  local more = take_ready(KEYS[1], KEYS[2], tonumber(ARGV[1]) - #taken, false)
  for i = 1, #more do
    taken[#taken + 1] = more[i]
  end
else
  taken = take_ready(KEYS[1], KEYS[2], tonumber(ARGV[1]), ARGV[2] == PRIO_MARKER)
end
local n = #taken
if ARGV[3] == '1' then
  local now = now_ms()
  for i = 1, #taken do
    if expired(taken[i], now) then
      n = n - 1
    end
  end
end
count_settled(KEYS[4], KEYS[5], 'p', n)
return taken
