// Supersede chains inside the fence: newest capsule first, following SUPERSEDES to the oldest
// (Neo4j Browser).
//
//   :param project_prefix => 'shop'      (null = the whole store)
//
// A chain runs from a head (nothing supersedes it) to a tail (it supersedes nothing). `live`
// tells whether the head is tombstoned: a tombstoned head no longer supersedes (SPEC §1), so
// the capsule it replaced counts as current again. `SHORTEST 1` per (head, tail) keeps this
// polynomial even when supersede edges branch and merge.
MATCH (head:Capsule)-[:SUPERSEDES]->(:Capsule)
WHERE NOT EXISTS { MATCH (:Capsule)-[:SUPERSEDES]->(head) }
  AND ($project_prefix IS NULL
       OR head.project_id = $project_prefix
       OR head.project_id STARTS WITH $project_prefix + '/')
WITH DISTINCT head
MATCH p = SHORTEST 1 (head)-[:SUPERSEDES]->+(tail:Capsule)
WHERE NOT EXISTS { MATCH (tail)-[:SUPERSEDES]->(:Capsule) }
RETURN [n IN nodes(p) | n.id] AS chain,
       [n IN nodes(p) | n.headline] AS headlines,
       head.tombstoned_at IS NULL AS live,
       p
ORDER BY head.seq, tail.seq
