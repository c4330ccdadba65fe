// Export: the next page of edges of one type, ordered by (from seq, to seq), keyset after ($arg.from_seq, $arg.to_seq).
// `a.seq >= $arg.from_seq` lets the planner seek the seq index instead of rescanning every edge per page.
MATCH (a:Capsule)
WHERE a.seq >= $arg.from_seq
MATCH (a)-[r]->(b:Capsule)
WHERE type(r) = $arg.type AND (a.seq > $arg.from_seq OR b.seq > $arg.to_seq)
RETURN a.id AS from, a.seq AS from_seq, b.id AS to, b.seq AS to_seq
ORDER BY from_seq ASC, to_seq ASC
LIMIT $arg.limit
