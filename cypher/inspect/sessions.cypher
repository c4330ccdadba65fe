// Sessions and their handoffs inside the fence, newest first (SPEC §11; Neo4j Browser).
//
//   :param project_prefix => 'shop'      (null = the whole store)
//
// Each session with its agent, start and finish, and the handoff capsule it left (none while it is
// open). `current` is false once a later handoff of the same agent superseded it (or it was tombstoned).
MATCH (s:Session)
WHERE $project_prefix IS NULL
   OR s.project_id = $project_prefix
   OR s.project_id STARTS WITH $project_prefix + '/'
OPTIONAL MATCH (s)-[:HANDED_OFF]->(h:Handoff)
RETURN s.id AS session, s.agent AS agent, s.project_id AS project_id, s.started_at AS started_at,
       s.finished_at AS finished_at, h.id AS handoff, h.headline AS headline,
       h IS NOT NULL AND h.tombstoned_at IS NULL AND NOT coalesce(h.superseded, false) AS current, s, h
ORDER BY s.started_at DESC, s.id DESC
