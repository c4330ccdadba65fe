// memory_session_start: a new session id from the counter named 'session' (MERGE on the unique name plus
// the write lock of SET serialise concurrent starts), and its node.
MERGE (k:IdCounter {name: 'session'})
ON CREATE SET k.value = 0
SET k.value = k.value + 1
CREATE (s:Session {id: 'ses-' + toString(k.value), agent: $arg.agent, project_id: $arg.project_id,
                   started_at: $arg.now})
RETURN s.id AS id
