// SPEC §3 fail-closed check: ONE concrete live blocks-cycle in the fence, or no row.
// Live = a fenced task/epic that is open, not tombstoned and not superseded (by a non-tombstoned capsule).
//
// Why this is polynomial and canonical (see graphsvc/bootstrap.py for the full argument):
// numeric ids cannot increase all the way round a cycle, so every cycle has a "back edge" a->b with
// a.seq > b.seq, in particular the edge INTO its smallest node m, and the rest of that cycle is a path
// m ->...-> a through nodes with seq > m.seq. So: take live back edges in (b.seq, a.seq) order and, for
// each, ask a BFS shortest-path operator (SHORTEST 1, predicates inlined so they prune the search, no path
// enumeration) for a path b ->...-> a through live fenced nodes with seq > b.seq; stop at the first hit.
// The first hit's b is the smallest node on any live cycle, and the cycle comes out already rotated.
// Without back edges (edges created old -> new) this is one pass over the fenced BLOCKS edges.
MATCH (a:Capsule)-[:BLOCKS]->(b:Capsule)
WHERE a.seq > b.seq
  AND a.kind IN ['task', 'epic'] AND b.kind IN ['task', 'epic']
  AND a.status = 'open' AND b.status = 'open'
  AND a.tombstoned_at IS NULL AND b.tombstoned_at IS NULL
  AND ($project_id IS NULL OR (a.project_id = $project_id AND b.project_id = $project_id))
  AND ($project_prefix IS NULL OR (
        (a.project_id = $project_prefix OR a.project_id STARTS WITH $project_prefix + '/')
    AND (b.project_id = $project_prefix OR b.project_id STARTS WITH $project_prefix + '/')))
  AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(a) WHERE s.tombstoned_at IS NULL }
  AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(b) WHERE s.tombstoned_at IS NULL }
WITH a, b
ORDER BY b.seq ASC, a.seq ASC
CALL (a, b) {
  MATCH p = SHORTEST 1 (b)(()-[:BLOCKS]->(x:Capsule
      WHERE x.seq > b.seq
        AND x.kind IN ['task', 'epic']
        AND x.status = 'open'
        AND x.tombstoned_at IS NULL
        AND ($project_id IS NULL OR x.project_id = $project_id)
        AND ($project_prefix IS NULL OR x.project_id = $project_prefix OR x.project_id STARTS WITH $project_prefix + '/')
        AND NOT EXISTS { MATCH (s:Capsule)-[:SUPERSEDES]->(x) WHERE s.tombstoned_at IS NULL }))+(a)
  RETURN [n IN nodes(p) | n.id] AS cycle
}
RETURN cycle
LIMIT 1
