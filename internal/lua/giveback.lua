-- giveback: put items taken from the ready list or the priority set back
-- first in line, each where its priority sends it (ready_push): a Take
-- whose caller left before the reply came, or items popped past a
-- PRIO_MARKER by a pop that did not yet know the queue has priorities.
--
-- Every key is read before the first write, so a call that fails changes
-- nothing.
--
-- KEYS[1] -> redelay:{q}:ready      LIST
-- KEYS[2] -> redelay:{q}:prio       ZSET  ready items of priority 1..9
-- KEYS[3] -> redelay:{q}:seq        STRING counter
-- ARGV    -> the envelopes, the one to take first last
--
-- Output: the number of items given back

ready_check(KEYS[1], KEYS[2])
ready_push(KEYS[1], KEYS[2], KEYS[3], ARGV, true)
return #ARGV
