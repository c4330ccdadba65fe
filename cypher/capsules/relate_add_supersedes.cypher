// Add SUPERSEDES edges (new)-[:SUPERSEDES]->(old) between existing capsules; reports which were already there.
// Both ends of every edge are locked first, in id order (one order for every writer, so two
// requests relating the same capsules wait for each other instead of deadlocking), and only then
// is an edge looked for: of two requests adding or removing one edge at once, the second sees
// what the first committed and reports it (a look before the lock would have both report the change).
CALL () {
  UNWIND $arg.edges AS e
  UNWIND [e.from, e.to] AS end_id
  WITH DISTINCT end_id ORDER BY end_id
  MATCH (c:Capsule {id: end_id})
  USING INDEX SEEK c:Capsule(id)
  SET c.relate_lock = true
  REMOVE c.relate_lock
  RETURN count(*) AS locked
}
UNWIND $arg.edges AS e
MATCH (a:Capsule {id: e.from})
USING INDEX SEEK a:Capsule(id)
MATCH (b:Capsule {id: e.to})
USING INDEX SEEK b:Capsule(id)
WITH a, b, e, EXISTS { (a)-[:SUPERSEDES]->(b) } AS existed
MERGE (a)-[:SUPERSEDES]->(b)
RETURN e.from AS from, e.to AS to, existed
