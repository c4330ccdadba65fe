// The backward search of a Pearce–Kelly insertion: what reaches $start through unmarked BLOCKS edges
// and nodes whose ord is at least $bound. A breadth-first pruning expand: no path is enumerated.
MATCH (m:Capsule) ((x:Capsule WHERE x.ord >= $bound)-[r:BLOCKS WHERE r.closes_loop IS NULL]->())+ (:Capsule {id: $start})
RETURN DISTINCT m.id AS id, m.ord AS ord
