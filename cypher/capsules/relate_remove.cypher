// Remove edges of the given type; an edge that is not there is a reported no-op (existed = false).
// Both ends are hinted to their id seeks: left to itself the planner once solved one end with a
// scan of the whole id index and joined on it (seen in CI, on a store built by the plan test).
UNWIND $arg.edges AS e
OPTIONAL MATCH (a:Capsule {id: e.from})-[r]->(b:Capsule {id: e.to})
USING INDEX SEEK a:Capsule(id)
USING INDEX SEEK b:Capsule(id)
WHERE type(r) = e.type
WITH e, collect(r) AS found
FOREACH (r IN found | DELETE r)
RETURN e.type AS type, e.from AS from, e.to AS to, size(found) > 0 AS existed
