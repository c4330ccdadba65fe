// The forward search of a Pearce–Kelly insertion: what $start reaches through unmarked BLOCKS edges
// and nodes whose ord is at most $bound (every unmarked edge goes up in ord, so nothing past the
// bound can lead back to the new edge's source). A breadth-first pruning expand: no path is enumerated.
MATCH (:Capsule {id: $start}) (()-[r:BLOCKS WHERE r.closes_loop IS NULL]->(y:Capsule WHERE y.ord <= $bound))+ (m:Capsule)
RETURN DISTINCT m.id AS id, m.ord AS ord
