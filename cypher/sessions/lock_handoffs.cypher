// memory_session_finish: the lock of one agent's handoffs in one project, taken (created if need be)
// before sessions/previous_handoffs reads them and held to the end of the transaction. Two finishes
// of one agent in one project (two sessions) serialise here, so the later one reads the handoff the
// earlier one stored and supersedes it: exactly one stays live. No other writer takes this lock.
MERGE (l:GraphsvcLock {name: $arg.key})
SET l.taken = coalesce(l.taken, 0) + 1
