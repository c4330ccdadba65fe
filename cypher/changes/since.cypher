// SPEC §13: the projects marked (cypher/changes/mark.cypher) at or after $arg.since_ms minus
// $arg.lookback_ms on Neo4j's clock ($arg.since_ms null: from its now), through the changed_at_ms
// index, and that clock now (the poller's next cursor). The look-back covers a write whose mark
// was stamped before its commit became visible (at most its transaction's timeout).
CALL {
  MATCH (m:ProjectChange)
  USING INDEX m:ProjectChange(changed_at_ms)
  WHERE m.changed_at_ms >= coalesce($arg.since_ms, timestamp()) - $arg.lookback_ms
  RETURN collect([m.project_id, m.seq, m.changed_at_ms]) AS changes
}
RETURN timestamp() AS now_ms, changes
