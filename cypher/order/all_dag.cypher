// Every task/epic capsule number and every BLOCKS edge, one page of nodes at a time (keyset on seq):
// the input of graphsvc.core.order.from_scratch (migration, verify, repair).
MATCH (c:Capsule)
WHERE c.kind IN ['task', 'epic'] AND c.seq > $arg.after
WITH c ORDER BY c.seq ASC LIMIT $arg.limit
RETURN c.seq AS seq, c.ord AS ord,
       COLLECT { MATCH (c)-[r:BLOCKS]->(t:Capsule) RETURN [t.seq, r.closes_loop IS NOT NULL] } AS out
