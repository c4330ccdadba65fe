// Remove edges of the given type; an edge that is not there is a reported no-op (existed = false).
UNWIND $edges AS e
OPTIONAL MATCH (:Capsule {id: e.from})-[r]->(:Capsule {id: e.to})
WHERE type(r) = e.type
WITH e, collect(r) AS found
FOREACH (r IN found | DELETE r)
RETURN e.type AS type, e.from AS from, e.to AS to, size(found) > 0 AS existed
