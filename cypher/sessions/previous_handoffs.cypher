// The live (not tombstoned, not superseded) handoffs this agent left in this project, found on the
// capsules themselves (each handoff records its `agent`), so a store restored from an export, which
// holds the handoffs but not the sessions, still finds them. Seeks the Handoff(agent, project_id) index.
MATCH (h:Handoff)
WHERE h.agent = $arg.agent AND h.project_id = $arg.project_id
  AND h.tombstoned_at IS NULL AND NOT coalesce(h.superseded, false)
RETURN h.id AS id
ORDER BY h.seq
