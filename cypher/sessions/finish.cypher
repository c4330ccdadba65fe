// memory_session_finish: close the session and link the handoff capsule it just stored.
MATCH (s:Session {id: $arg.id})
MATCH (h:Capsule {id: $arg.handoff_id})
SET s.finished_at = $arg.now, s.finish_hash = $arg.finish_hash
CREATE (s)-[:HANDED_OFF]->(h)
