-- size: how many items are ready to take, as every count of ready items
-- counts them (X.ready_len: the ready list's, less the priority marker at
-- its tail, and the priority set's). It changes nothing. O(1).
--
-- KEYS[1] -> redelay:{q}:ready LIST
-- KEYS[2] -> redelay:{q}:prio  ZSET  ready items of priority 1..9
--
-- Output: the count.
return extra().ready_len(KEYS[1], KEYS[2])
