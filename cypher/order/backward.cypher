// The backward search of a Pearce–Kelly insertion: what reaches $arg.start through unmarked BLOCKS edges
// and nodes whose ord is at least $arg.bound. A breadth-first pruning expand from $arg.start against the
// edges' direction: no path is enumerated. Only $arg.start carries a label: BLOCKS joins capsules only,
// and with `:Capsule` on the far nodes the planner scanned the Capsule(ord) index and expanded from
// every capsule, ~100 s a call on a 100k store. `USING INDEX SEEK` pins the unique seek of $arg.start (a plain
// `USING INDEX` still let the planner scan the whole id index, seen in CI)
// (tests/integration/test_bootstrap_plan.py).
MATCH (s:Capsule {id: $arg.start}) (()<-[r:BLOCKS WHERE r.closes_loop IS NULL]-(x WHERE x.ord >= $arg.bound))+ (m)
USING INDEX SEEK s:Capsule(id)
RETURN DISTINCT m.id AS id, m.ord AS ord
