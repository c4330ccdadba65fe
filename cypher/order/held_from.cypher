// Every task/epic capsule holding an ord whose ord, or whose seq, is at least $arg.low: what closing
// the order's gaps after a removal may renumber (graphsvc.core.order.close_gaps).
CALL () {
  MATCH (c:Capsule) USING INDEX SEEK c:Capsule(ord)
  WHERE c.ord >= $arg.low AND c.kind IN ['task', 'epic']
  RETURN c.id AS id, c.ord AS ord, null AS seq
  UNION ALL
  MATCH (c:Capsule) USING INDEX SEEK c:Capsule(seq)
  WHERE c.seq >= $arg.low AND c.kind IN ['task', 'epic'] AND c.ord IS NOT NULL
  RETURN null AS id, null AS ord, c.seq AS seq
}
RETURN id, ord, seq
