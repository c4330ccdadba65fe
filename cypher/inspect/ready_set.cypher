// A project's ready set, by the rules of SPEC §3 (Neo4j Browser).
//
//   :param project_prefix => 'shop'      (null = the whole store)
//
// Ready = a task/epic inside the fence that is open, not tombstoned, not superseded (no incoming
// SUPERSEDES from a non-tombstoned capsule), not expired (valid_to <= now, now = datetime()), and
// whose every BLOCKS predecessor is done, tombstoned or superseded. A predecessor outside the fence
// still counts: a blocker does not stop blocking because it lives in another project.
// Order: most recently updated first (the pack's decay order without terms), then id number.
// A live blocks-cycle makes the pack fail closed; run cycle.cypher to see it.
WITH datetime() AS now
MATCH (c:Capsule)
WHERE c.kind IN ['task', 'epic']
  AND ($project_prefix IS NULL
       OR c.project_id = $project_prefix
       OR c.project_id STARTS WITH $project_prefix + '/')
  AND c.tombstoned_at IS NULL
  AND c.status = 'open'
  AND (c.valid_to IS NULL OR c.valid_to > now)
  AND NOT EXISTS { MATCH (newer:Capsule)-[:SUPERSEDES]->(c) WHERE newer.tombstoned_at IS NULL }
  AND NOT EXISTS {
    MATCH (blocker:Capsule)-[:BLOCKS]->(c)
    WHERE blocker.status <> 'done'
      AND blocker.tombstoned_at IS NULL
      AND NOT EXISTS { MATCH (newer:Capsule)-[:SUPERSEDES]->(blocker) WHERE newer.tombstoned_at IS NULL }
  }
RETURN c.id AS id, c.headline AS headline, c.kind AS kind, c AS capsule
ORDER BY c.updated_at DESC, c.seq ASC
