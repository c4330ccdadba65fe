// The forward search of a Pearce–Kelly insertion: what $arg.start reaches through unmarked BLOCKS edges
// and nodes whose ord is at most $arg.bound (every unmarked edge goes up in ord, so nothing past the
// bound can lead back to the new edge's source). A breadth-first pruning expand: no path is enumerated.
// Only $arg.start carries a label: BLOCKS joins capsules only, and with `:Capsule` on the far nodes the
// planner would rather scan or seek the Capsule(ord) index and join, work that grows with the store.
// `USING INDEX SEEK` pins the unique seek of $arg.start: unhinted, and even under a plain `USING INDEX`,
// plans scanning the whole id index were seen (tests/integration/test_bootstrap_plan.py).
MATCH (s:Capsule {id: $arg.start}) (()-[r:BLOCKS WHERE r.closes_loop IS NULL]->(y WHERE y.ord <= $arg.bound))+ (m)
USING INDEX SEEK s:Capsule(id)
RETURN DISTINCT m.id AS id, m.ord AS ord
