// SPEC §13: record that a write transaction changed what packs of these projects may show.
// One (:ProjectChange) node per project: `seq` counts the transactions that touched it and
// `changed_at_ms` is Neo4j's clock at the mark, which the watchers' poller seeks by
// (cypher/changes/since.cypher). Sorted ids: every transaction takes these locks in one order.
UNWIND $arg.project_ids AS project_id
WITH DISTINCT project_id ORDER BY project_id
MERGE (m:ProjectChange {project_id: project_id})
SET m.seq = coalesce(m.seq, 0) + 1, m.changed_at_ms = timestamp()
