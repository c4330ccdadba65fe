// The live (not tombstoned, not superseded) handoffs earlier sessions of this agent left in this project.
MATCH (p:Session)
WHERE p.agent = $arg.agent AND p.project_id = $arg.project_id
MATCH (p)-[:HANDED_OFF]->(h:Handoff)
WHERE h.tombstoned_at IS NULL AND NOT coalesce(h.superseded, false)
RETURN h.id AS id
ORDER BY h.seq
