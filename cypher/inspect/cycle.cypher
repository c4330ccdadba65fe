// One live blocks-cycle inside the fence, if any (SPEC §3 fail-closed; Neo4j Browser).
//
//   :param project_prefix => 'shop'      (null = the whole store)
//
// Live = task/epic capsules inside the fence that are open and not tombstoned; only these may
// sit on the cycle. Returns no row when there is no cycle.
// Polynomial by construction: `SHORTEST 1` runs one breadth-first search per start node
// (Neo4j plans it as a ShortestPath operator), so no path is ever enumerated; a DAG with
// exponentially many paths costs O(V * (V + E)) at worst.
// Starts are tried in id order and the search stops at the first one that closes a cycle.
// The start is the smallest-numbered capsule that lies on any cycle, so `cycle` is the shortest
// cycle through it, in BLOCKS order (each blocks the next, the last blocks the first) and
// already rotated to start at its smallest id. It goes through the same first capsule as the
// pack's `cycle` (graphsvc/core/cycles.py); when several cycles through it are equally short, the pack
// picks the smallest id sequence and this query any one of them (Cypher has no ordered BFS, and
// ALL SHORTEST could enumerate exponentially many ties).
MATCH (start:Capsule)
WHERE start.kind IN ['task', 'epic']
  AND start.status = 'open'
  AND start.tombstoned_at IS NULL
  AND ($project_prefix IS NULL
       OR start.project_id = $project_prefix
       OR start.project_id STARTS WITH $project_prefix + '/')
WITH start
ORDER BY start.seq
MATCH p = SHORTEST 1 (start)(()-[:BLOCKS]->(step:Capsule
    WHERE step.kind IN ['task', 'epic']
      AND step.status = 'open'
      AND step.tombstoned_at IS NULL
      AND ($project_prefix IS NULL
           OR step.project_id = $project_prefix
           OR step.project_id STARTS WITH $project_prefix + '/')))+(start)
WITH start, p
ORDER BY start.seq
LIMIT 1
RETURN [n IN nodes(p)[..-1] | n.id] AS cycle, p
