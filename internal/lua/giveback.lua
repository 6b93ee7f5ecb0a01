-- giveback: put items taken from the ready list or the priority set back
-- first in line, each where its priority sends it (ready_push): a Take
-- whose caller left before the reply came, or items popped past a
-- PRIO_MARKER by a pop that did not yet know the queue has priorities.
--
-- The items exist only in the caller, which took them out of Redis with
-- an earlier call: a failure here loses them. Every key is read before
-- the first write, and the order counter does not fail the call: when it
-- holds no integer, or is of another type (a foreign write), the items of
-- priority are placed first in their priority band by the scores already
-- there (P.edge), the place the counter would give them, and the counter
-- is left as it is (the scripts that need it fail before their first
-- write and say so: seq_check).
--
-- KEYS[1] -> redelay:{q}:ready      LIST
-- KEYS[2] -> redelay:{q}:prio       ZSET  ready items of priority 1..9
-- KEYS[3] -> redelay:{q}:seq        STRING counter (seq_usable)
-- ARGV    -> the envelopes, the one to take first last
--
-- Output: the number of items given back

ready_check(KEYS[1], KEYS[2])
local kSeq = KEYS[3]
if not seq_usable(kSeq) then
  kSeq = nil
end
ready_push(KEYS[1], KEYS[2], kSeq, ARGV, true)
return #ARGV
