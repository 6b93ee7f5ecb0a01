-- pop: Take's pop on a queue that has held items of priority 1..9 (see
-- Priorities in prelude.lua): up to ARGV[1] ready items, from the priority
-- set first (highest priority, then oldest), then the oldest of the ready
-- list, dropping the markers met on the way. When ARGV[2] is PRIO_MARKER,
-- the caller's blocking wait moved a marker to the claimed list: it is
-- dropped first. Not idempotent: like RPOP, a lost reply loses what it took
-- (the caller does not resend it).
--
-- A call that fails changes nothing: ZPOPMIN is the first write (LREM of a
-- claimed marker comes after a read of the priority set), and the ready
-- list is read (LINDEX) before it is written.
--
-- KEYS[1] -> redelay:{q}:ready      LIST
-- KEYS[2] -> redelay:{q}:prio       ZSET  ready items of priority 1..9
-- KEYS[3] -> redelay:{q}:claimed    LIST  items popped by waiting consumers
-- ARGV[1] -> how many items at most
-- ARGV[2] -> PRIO_MARKER to drop from the claimed list, or ''
--
-- Output: the envelopes taken, in take order (empty when none)

if ARGV[2] == PRIO_MARKER then
  redis.call('ZCARD', KEYS[2])
  redis.call('LREM', KEYS[3], 1, PRIO_MARKER)
end
return take_ready(KEYS[1], KEYS[2], tonumber(ARGV[1]), true)
