// SPEC §3 fail-closed check, Neo4j's half: the live blocks-subgraph of the fence, as edges (seq pairs).
// Live = a fenced task/epic that is open, not tombstoned and not superseded (by a non-tombstoned capsule).
// Python (graphsvc.cycles) finds one canonical cycle in it in linear time.
//
// A cycle needs a back edge a->b with a.seq > b.seq (numeric ids cannot increase all the way round),
// so when there is none (edges created old -> new, the common case) no edge is sent at all.
MATCH (a:Capsule)
WHERE a.kind IN ['task', 'epic']
  AND a.project_id STARTS WITH coalesce($project_id, $project_prefix, '')  // seeks the (kind, project_id) index
  AND ($project_id IS NULL OR a.project_id = $project_id)
  AND ($project_prefix IS NULL OR a.project_id = $project_prefix OR a.project_id STARTS WITH $project_prefix + '/')
  AND a.status = 'open'
  AND a.tombstoned_at IS NULL
  AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(a) WHERE s.tombstoned_at IS NULL }
MATCH (a)-[:BLOCKS]->(b:Capsule)
WHERE b.kind IN ['task', 'epic']
  AND ($project_id IS NULL OR b.project_id = $project_id)
  AND ($project_prefix IS NULL OR b.project_id = $project_prefix OR b.project_id STARTS WITH $project_prefix + '/')
  AND b.status = 'open'
  AND b.tombstoned_at IS NULL
  AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(b) WHERE s.tombstoned_at IS NULL }
WITH collect(a.seq) AS sources, collect(b.seq) AS targets, count(CASE WHEN a.seq > b.seq THEN 1 END) AS back_edges
RETURN back_edges,
       CASE WHEN back_edges > 0 THEN sources ELSE [] END AS sources,
       CASE WHEN back_edges > 0 THEN targets ELSE [] END AS targets
