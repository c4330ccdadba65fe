// memory_session_finish: close the session, link the handoff capsule it just stored and record the
// session's agent on it (the capsule travels with an export; the session does not).
MATCH (s:Session {id: $arg.id})
MATCH (h:Capsule {id: $arg.handoff_id})
SET s.finished_at = $arg.now, s.finish_hash = $arg.finish_hash, h.agent = s.agent
CREATE (s)-[:HANDED_OFF]->(h)
