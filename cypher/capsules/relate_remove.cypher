// Remove edges of the given type; an edge that is not there is a reported no-op (existed = false).
// Both ends are hinted to their id seeks: left to itself the planner once solved one end with a
// scan of the whole id index and joined on it (seen in CI, on a store built by the plan test).
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
OPTIONAL MATCH (a:Capsule {id: e.from})-[r]->(b:Capsule {id: e.to})
USING INDEX SEEK a:Capsule(id)
USING INDEX SEEK b:Capsule(id)
WHERE type(r) = e.type
WITH e, collect(r) AS found
FOREACH (r IN found | DELETE r)
RETURN e.type AS type, e.from AS from, e.to AS to, size(found) > 0 AS existed
