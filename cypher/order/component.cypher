// The BLOCKS component (edges either way, marked or not) of $start: every node's id, seq and ord and
// its outgoing edges (to seq, marked), to order it again from scratch. A breadth-first pruning
// expand: no path is enumerated.
MATCH (:Capsule {id: $start})-[:BLOCKS*0..]-(c:Capsule)
WITH DISTINCT c
RETURN c.id AS id, c.seq AS seq, c.ord AS ord,
       COLLECT { MATCH (c)-[r:BLOCKS]->(t:Capsule) RETURN [t.seq, r.closes_loop IS NOT NULL] } AS out
