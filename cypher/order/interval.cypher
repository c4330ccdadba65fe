// The task/epic capsules whose ord lies in one of the given [low, high] intervals, with their outgoing
// BLOCKS edges (to seq, to ord, marked): a batch of edges against the order is mended by ordering
// exactly these regions again (graphsvc.store.blocks_order.reorder_intervals).
UNWIND $arg.intervals AS interval
MATCH (c:Capsule)
WHERE c.ord >= interval[0] AND c.ord <= interval[1]
RETURN c.id AS id, c.seq AS seq, c.ord AS ord,
       COLLECT { MATCH (c)-[r:BLOCKS]->(t:Capsule) RETURN [t.seq, t.ord, r.closes_loop IS NOT NULL] } AS out
