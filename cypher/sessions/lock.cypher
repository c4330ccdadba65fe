// memory_session_finish: the session, write-locked for the rest of the transaction (two finishes of one
// session serialise here), with what a finish stored (its request hash and handoff id), or no row.
MATCH (s:Session {id: $arg.id})
SET s.session_lock = true
REMOVE s.session_lock
RETURN s.agent AS agent, s.project_id AS project_id, s.finished_at IS NOT NULL AS finished,
       s.finish_hash AS finish_hash, [(s)-[:HANDED_OFF]->(h) | h.id][0] AS handoff_id
