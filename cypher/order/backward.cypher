// The backward search of a Pearce–Kelly insertion: what reaches $start through unmarked BLOCKS edges
// and nodes whose ord is at least $bound. A breadth-first pruning expand from $start against the
// edges' direction: no path is enumerated. Only $start carries a label: BLOCKS joins capsules only,
// and with `:Capsule` on the far nodes the planner scanned the Capsule(ord) index and expanded from
// every capsule, ~100 s a call on a 100k store. `USING INDEX SEEK` pins the unique seek of $start (a plain
// `USING INDEX` still let the planner scan the whole id index, seen in CI)
// (tests/integration/test_bootstrap_plan.py).
MATCH (s:Capsule {id: $start}) (()<-[r:BLOCKS WHERE r.closes_loop IS NULL]-(x WHERE x.ord >= $bound))+ (m)
USING INDEX SEEK s:Capsule(id)
RETURN DISTINCT m.id AS id, m.ord AS ord
