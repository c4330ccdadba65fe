// SPEC §13: the projects marked (cypher/changes/mark.cypher) at or after $arg.since_ms on Neo4j's
// clock, through the changed_at_ms index, and that clock now (the poller's next cursor).
CALL {
  MATCH (m:ProjectChange)
  USING INDEX m:ProjectChange(changed_at_ms)
  WHERE m.changed_at_ms >= $arg.since_ms
  RETURN collect([m.project_id, m.seq]) AS changes
}
RETURN timestamp() AS now_ms, changes
